export const poolPage = { wire() {}, show() {}, hide() {}, async refresh() {} };
