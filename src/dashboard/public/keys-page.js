export const keysPage = { wire() {}, show() {}, hide() {}, async refresh() {} };
