// The API keys page (#/keys): create a key (shown once), list the tenant's keys with their scopes,
// revoke one. Through the public /v1/keys API, which needs the admin scope.
import { $, api, describe, h, onSubmit, renderRows, showResult } from './lib.js';

/** The scopes a key may carry (the service's list; `<family>:admin` implies its family). */
const SCOPES = [
  ['admin', 'everything, including keys and metrics'],
  ['pools:read', 'read pools, codes, exports, events'],
  ['pools:claim', 'claim, release, redeem, hold codes'],
  ['pools:admin', 'create, import, revoke, delete pools'],
  ['sales:read', 'read sales, holds, waiting rooms'],
  ['sales:buy', 'buy, hold, join waiting rooms'],
  ['sales:admin', 'create, edit, cancel sales'],
  ['locks:read', 'read locks and counters'],
  ['locks:write', 'take locks, change counters'],
  ['metrics:read', 'read /metrics'],
];

const page = { me: null };

async function refresh() {
  if (!page.me)
    page.me = await api('GET', '/v1/me').catch((error) => (error.status === 401 ? Promise.reject(error) : null));
  if (page.me)
    $('keys-me').textContent =
      `Logged in with key ${page.me.keyId} (tenant ${page.me.tenant}; scopes ${page.me.scopes.join(', ')}).`;
  let keys;
  try {
    keys = (await api('GET', '/v1/keys')).data;
  } catch (error) {
    if (error.status === 401) throw error;
    renderRows('key-rows', [], 6, () => [], describe(error));
    return;
  }
  renderRows(
    'key-rows',
    keys,
    6,
    (rows) =>
      rows.map((key) => {
        const mine = key.id === page.me?.keyId;
        return h(
          'tr',
          { 'data-key': key.id },
          h('th', { scope: 'row' }, key.name, mine ? h('span', { class: 'hint' }, ' (this tab)') : null),
          h('td', {}, h('code', {}, key.id)),
          h('td', {}, key.scopes.join(', ')),
          h('td', {}, new Date(key.createdAt).toLocaleString()),
          h('td', {}, key.revokedAt ? `revoked ${new Date(key.revokedAt).toLocaleString()}` : 'active'),
          h(
            'td',
            {},
            key.revokedAt
              ? null
              : h(
                  'button',
                  {
                    type: 'button',
                    class: 'secondary',
                    'aria-label': `Revoke key ${key.name} (${key.id})`,
                    onclick: (event) => revoke(key, mine, event.currentTarget),
                  },
                  'Revoke',
                ),
          ),
        );
      }),
    'No keys.',
  );
}

/** Revoking is for good (and revoking this tab's own key logs it out): the first press asks. */
async function revoke(key, mine, button) {
  if (button.dataset.armed !== 'true') {
    button.dataset.armed = 'true';
    button.textContent = mine ? 'Confirm (logs you out)' : 'Confirm revoke';
    button.setAttribute('aria-label', `Confirm: revoke key ${key.name} (${key.id}) for good`);
    return;
  }
  button.disabled = true;
  try {
    await api('DELETE', `/v1/keys/${encodeURIComponent(key.id)}`);
    showResult('key-action-result', `Revoked key ${key.name} (${key.id}).`, true);
    await refresh();
  } catch (error) {
    button.disabled = false;
    if (error.status !== 401) showResult('key-action-result', describe(error), false);
  }
}

function wire() {
  $('key-scopes').replaceChildren(
    ...SCOPES.map(([scope, what]) =>
      h(
        'p',
        { class: 'check' },
        h('input', { type: 'checkbox', id: `scope-${scope.replace(':', '-')}`, name: 'scopes', value: scope }),
        h(
          'label',
          { for: `scope-${scope.replace(':', '-')}` },
          h('code', {}, scope),
          h('span', { class: 'hint' }, ` — ${what}`),
        ),
      ),
    ),
  );
  onSubmit('key-create-form', 'key-create-result', async (form) => {
    const scopes = [...form.querySelectorAll('input[name=scopes]:checked')].map((box) => box.value);
    if (scopes.length === 0) throw new Error('Pick at least one scope.');
    const created = await api('POST', '/v1/keys', { body: { name: form.elements.name.value.trim(), scopes } });
    $('key-secret-value').textContent = created.key;
    $('key-secret').hidden = false;
    $('key-secret-value').focus();
    form.elements.name.value = '';
    for (const box of form.querySelectorAll('input[name=scopes]')) box.checked = false;
    await refresh();
    return `Created key ${created.apiKey.name} (${created.apiKey.id}) with ${scopes.join(', ')}.`;
  });
  $('key-copy').addEventListener('click', async () => {
    try {
      await navigator.clipboard.writeText($('key-secret-value').textContent);
      showResult('key-create-result', 'Copied the key to the clipboard.', true);
    } catch {
      showResult('key-create-result', 'This browser did not allow copying: select the key and copy it by hand.', false);
    }
  });
  $('key-secret-done').addEventListener('click', () => {
    $('key-secret-value').textContent = '';
    $('key-secret').hidden = true;
    $('key-name').focus();
  });
}

export const keysPage = {
  wire,
  show() {},
  hide() {
    // the secret never outlives the page it was shown on
    $('key-secret-value').textContent = '';
    $('key-secret').hidden = true;
  },
  refresh,
};
