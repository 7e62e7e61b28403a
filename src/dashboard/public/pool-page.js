// The pool page (#/pool/<name>): counts, claim rate with the store's forecast, code lookup and
// claimant lookup with release / redeem / refund / revoke from there, a streamed import with
// progress, code generation, export and the audit. Everything through the public /v1 API with the tab's key.
import { renderRateChart } from './chart.js';
import {
  $,
  api,
  describe,
  download,
  duration,
  enc,
  forecastText,
  h,
  number,
  onSubmit,
  renderRows,
  showResult,
  upload,
} from './lib.js';

const page = { name: null, code: null, claimant: null, lookups: 0, refreshAll: () => {} };

/** Event pages (of 1,000) a code's history reads at most: the pool's events are read oldest first. */
const HISTORY_PAGES = 5;
const HISTORY_TEXT = {
  'code.unredeemed': (p) =>
    `refunded to ${p.claimant}${p.orderId ? ` (order ${p.orderId})` : ''}; it had been redeemed ${new Date(p.redeemedAt).toLocaleString()}`,
};

/**
 * A code's history from the outbox: the pool's events (the public /v1/events?pool=) that name it.
 * Claims, releases and redemptions record no event; refunds do. Bounded: the first
 * HISTORY_PAGES × 1,000 events of the pool.
 */
async function codeHistory(code) {
  const found = [];
  let after;
  for (let pages = 0; pages < HISTORY_PAGES; pages++) {
    const res = await api('GET', `/v1/events?pool=${enc(page.name)}&limit=1000${after ? `&after=${enc(after)}` : ''}`);
    for (const e of res.data) if (e.payload?.code === code) found.push(e);
    if (!res.nextCursor) return { found, complete: true };
    after = res.nextCursor;
  }
  return { found, complete: false };
}

async function showHistory(code, ticket) {
  let history;
  try {
    history = await codeHistory(code);
  } catch (error) {
    if (error.status === 401 || ticket !== page.lookups) return;
    $('code-history')?.replaceChildren(h('p', { class: 'hint' }, `History: ${describe(error)}`));
    return;
  }
  if (ticket !== page.lookups) return; // another lookup since: its own history is on the way
  const { found, complete } = history;
  $('code-history')?.replaceChildren(
    h('h5', {}, 'History (from the outbox)'),
    found.length
      ? h(
          'ol',
          { class: 'history' },
          found.map((e) =>
            h(
              'li',
              { 'data-event': e.id },
              h('time', { datetime: e.createdAt }, new Date(e.createdAt).toLocaleString()),
              ` — ${e.type}: `,
              HISTORY_TEXT[e.type]?.(e.payload ?? {}) ?? JSON.stringify(e.payload ?? {}),
            ),
          ),
        )
      : h(
          'p',
          { class: 'hint' },
          'No events name this code (claims, releases and redemptions record none; refunds do).',
        ),
    complete
      ? null
      : h('p', { class: 'hint' }, `Searched the pool's first ${number(HISTORY_PAGES * 1000)} events only.`),
  );
}

/** What an operator may do to a code in each status (the API decides; these are the sensible ones). */
const ACTIONS = {
  free: ['revoke'],
  claimed: ['release', 'redeem', 'revoke'],
  redeemed: ['unredeem', 'revoke'],
  revoked: [],
};
const LABEL = { release: 'Release', redeem: 'Redeem', unredeem: 'Refund', revoke: 'Revoke' };
const DONE = {
  release: 'released back to the pool',
  redeem: 'redeemed',
  unredeem: 'refunded to its holder',
  revoke: 'revoked for good',
};

async function refresh() {
  const name = page.name;
  if (!name) return;
  const [pool, forecast, series] = await Promise.all([
    api('GET', `/v1/pools/${enc(name)}`).catch((error) => {
      if (error.status !== 401) $('pool-error').textContent = describe(error);
      throw error;
    }),
    api('GET', `/v1/pools/${enc(name)}/forecast`).catch(() => null),
    api('GET', `/v1/pools/${enc(name)}/claim-rate`).catch(() => null),
  ]);
  if (name !== page.name) return;
  $('pool-error').textContent = '';
  for (const key of ['total', 'free', 'claimed', 'redeemed', 'revoked'])
    $(`pool-${key}`).textContent = number(pool.stats[key]);
  $('pool-forecast').textContent = forecast ? forecastText(forecast) : '–';
  if (series) {
    const pace = forecast?.basis ? forecast.perMinute[forecast.basis] : null;
    const container = $('pool-chart');
    container.dataset.pool = name;
    renderRateChart(container, series.points, {
      title: `Claim rate of ${name}`,
      forecast: pace === null ? null : { perMinute: pace, label: `forecast: ${forecastText(forecast)}` },
    });
    const last = series.points[series.points.length - 1];
    $('pool-chart-caption').textContent =
      `${last ? `${last.perMinute} per minute now, ${last.handedOut} handed out` : 'no samples yet'} · sampled by the service every ${series.everyMs / 1000} s while watched.`;
  }
}

function actionButtons(info) {
  return (ACTIONS[info.status] ?? []).map((action) =>
    h(
      'button',
      {
        type: 'button',
        class: action === 'revoke' ? 'secondary' : '',
        'aria-label': `${LABEL[action]} ${info.code}`,
        'data-action': action,
        onclick: (event) => act(info, action, event.currentTarget),
      },
      LABEL[action],
    ),
  );
}

/** Revoking is for good: the first press asks, the second does it. */
async function act(info, action, button) {
  if (action === 'revoke' && button.dataset.armed !== 'true') {
    button.dataset.armed = 'true';
    button.textContent = 'Confirm revoke';
    button.setAttribute('aria-label', `Confirm: revoke ${info.code} for good`);
    return;
  }
  button.disabled = true;
  try {
    const body = action === 'revoke' ? undefined : {};
    const after = await api(
      'POST',
      `/v1/pools/${enc(page.name)}/codes/${enc(info.code)}/${action}`,
      body === undefined ? {} : { body },
    );
    showResult('code-action-result', `${info.code} ${DONE[action]} (now ${after.status}).`, true);
    await Promise.all([page.code ? lookUpCode(page.code) : null, page.claimant ? lookUpClaimant(page.claimant) : null]);
    page.refreshAll();
  } catch (error) {
    button.disabled = false;
    if (error.status !== 401)
      showResult('code-action-result', `${LABEL[action]} ${info.code}: ${describe(error)}`, false);
  }
}

const when = (iso) => (iso ? new Date(iso).toLocaleString() : '–');

async function lookUpCode(code) {
  page.code = code;
  const ticket = ++page.lookups;
  const box = $('code-result');
  try {
    const info = await api('GET', `/v1/pools/${enc(page.name)}/codes/${enc(code)}`);
    const rows = [
      ['Status', h('span', { class: 'status', 'data-status': info.status }, info.status)],
      ['Holder', info.claimant ?? '–'],
      ['Claimed', when(info.claimedAt)],
      ['Redeemed', info.redeemedAt ? `${when(info.redeemedAt)}${info.orderId ? ` (order ${info.orderId})` : ''}` : '–'],
    ];
    if (info.startsAt || info.expiresAt)
      rows.push([
        'Valid',
        `${info.startsAt ? `from ${when(info.startsAt)} ` : ''}${info.expiresAt ? `until ${when(info.expiresAt)}` : ''}`,
      ]);
    if (info.hold)
      rows.push([
        'Checkout hold',
        `${info.hold.claimant}, ${duration(Date.parse(info.hold.expiresAt) - Date.now())} left`,
      ]);
    if (info.uses) rows.push(['Uses', JSON.stringify(info.uses)]);
    box.replaceChildren(
      h('h4', {}, 'Code ', h('code', {}, info.code)),
      h(
        'dl',
        { class: 'facts', 'data-code': info.code },
        rows.map(([term, value]) => h('div', {}, h('dt', {}, term), h('dd', {}, value))),
      ),
      h('p', { class: 'actions' }, actionButtons(info)),
      h('div', { id: 'code-history' }, h('p', { class: 'hint' }, 'Reading its history…')),
    );
    showHistory(info.code, ticket);
  } catch (error) {
    if (error.status === 401) return;
    box.replaceChildren(
      h('p', { class: 'error' }, error.status === 404 ? `No code ${code} in ${page.name}.` : describe(error)),
    );
  }
}

async function lookUpClaimant(claimant) {
  page.claimant = claimant;
  try {
    const { codes } = await api('GET', `/v1/pools/${enc(page.name)}/claimants/${enc(claimant)}`);
    $('claimant-summary').textContent = codes.length
      ? `${claimant} holds ${codes.length} code${codes.length === 1 ? '' : 's'}.`
      : `${claimant} holds no code of ${page.name}.`;
    renderRows(
      'claimant-rows',
      codes,
      4,
      (rows) =>
        rows.map((info) =>
          h(
            'tr',
            { 'data-code': info.code },
            h('th', { scope: 'row' }, h('code', {}, info.code)),
            h('td', {}, h('span', { class: 'status' }, info.status)),
            h('td', {}, when(info.claimedAt)),
            h('td', { class: 'actions' }, actionButtons(info)),
          ),
        ),
      'No codes.',
    );
  } catch (error) {
    if (error.status !== 401) $('claimant-summary').textContent = describe(error);
  }
}

function wire() {
  $('code-find-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const code = $('code-find').value.trim();
    if (code) lookUpCode(code);
  });
  $('claimant-find-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const claimant = $('claimant-find').value.trim();
    if (claimant) lookUpClaimant(claimant);
  });

  onSubmit('pool-import-form', 'pool-import-result', async (form) => {
    const name = page.name;
    const file = form.elements.file.files[0];
    const bar = $('pool-import-progress');
    bar.hidden = false;
    bar.value = 0;
    try {
      const result = await upload(`/v1/pools/${enc(name)}/codes`, file, (fraction) => {
        if (fraction < 1) {
          bar.value = Math.round(fraction * 100);
          showResult('pool-import-result', `Uploading ${file.name}: ${Math.round(fraction * 100)}%…`, true);
          return;
        }
        // The store imports as the upload streams in; the last batches commit after the last byte.
        bar.removeAttribute('value');
        showResult('pool-import-result', `Uploaded ${file.name}; ${name} is committing the last batches…`, true);
      });
      bar.value = 100;
      form.reset();
      page.refreshAll();
      const first = result.firstInvalid
        ? ` First skipped: line ${result.firstInvalid.line}, ${result.firstInvalid.field}: ${result.firstInvalid.message}.`
        : '';
      return `Imported ${number(result.imported)} codes into ${name} (${number(result.duplicates)} duplicates, ${number(result.invalid)} invalid).${first}`;
    } finally {
      setTimeout(() => {
        bar.hidden = true;
      }, 1500);
    }
  });

  onSubmit('pool-generate-form', 'pool-generate-result', async (form) => {
    const f = form.elements; // (a field named "length" would be shadowed by elements.length)
    const body = {
      count: Number(f.count.value),
      length: Number(f.randomLength.value),
      prefix: f.prefix.value,
      checkChar: f.checkChar.checked,
    };
    const result = await api('POST', `/v1/pools/${enc(page.name)}/generate`, { body });
    page.refreshAll();
    return `Generated ${number(result.generated)} codes into ${page.name}${result.collisions ? ` (${number(result.collisions)} draws collided and were redrawn)` : ''}.`;
  });

  onSubmit('pool-export-form', 'pool-export-result', async (form) => {
    const status = form.elements.status.value;
    const file = `${page.name}${status ? `-${status}` : ''}.csv`;
    await download(`/v1/pools/${enc(page.name)}/export${status ? `?status=${status}` : ''}`, file);
    return `Exported ${file}.`;
  });

  $('pool-audit').addEventListener('click', async (event) => {
    const button = event.currentTarget;
    const box = $('pool-audit-result');
    button.disabled = true;
    box.replaceChildren(h('p', { class: 'hint' }, 'Auditing…'));
    try {
      const { violations } = await api('GET', `/v1/pools/${enc(page.name)}/audit`);
      box.replaceChildren(
        violations.length
          ? h(
              'div',
              {},
              h('p', { class: 'error' }, `${violations.length} violation${violations.length === 1 ? '' : 's'} found:`),
              h(
                'ul',
                {},
                violations.map((v) => h('li', {}, h('strong', {}, v.invariant), ` ${v.message}`)),
              ),
            )
          : h(
              'p',
              { class: 'result ok' },
              `Clean: no violations in ${page.name} (audited ${new Date().toLocaleTimeString()}).`,
            ),
      );
    } catch (error) {
      if (error.status !== 401) box.replaceChildren(h('p', { class: 'error' }, describe(error)));
    } finally {
      button.disabled = false;
    }
  });
}

export const poolPage = {
  wire,
  show(name, { refresh: refreshAll }) {
    page.refreshAll = refreshAll;
    if (name === page.name) return;
    Object.assign(page, { name, code: null, claimant: null });
    $('pool-title').textContent = name;
    for (const id of ['code-result', 'pool-audit-result']) $(id).replaceChildren();
    for (const id of [
      'claimant-summary',
      'code-action-result',
      'pool-import-result',
      'pool-generate-result',
      'pool-export-result',
      'pool-error',
    ])
      $(id).textContent = '';
    $('claimant-rows').replaceChildren();
    for (const id of ['code-find', 'claimant-find']) $(id).value = '';
    renderRateChart($('pool-chart'), [], { title: `Claim rate of ${name}` });
  },
  hide() {},
  refresh,
};
