// dibs admin dashboard: plain browser JavaScript over the service's /v1 API, nothing loaded from
// elsewhere. Every call carries the API key from sessionStorage; a 401 returns to the log-in screen.
// This file: log-in, the overview and the address-driven switch to the detail pages.
import { renderRateChart } from './chart.js';
import {
  $,
  api,
  authHeaders,
  describe,
  download,
  duration,
  enc,
  forecastText,
  forgetRendered,
  h,
  number,
  onSubmit,
  renderRows,
  session,
  toast,
  upload,
} from './lib.js';
import { deliveriesPage } from './deliveries-page.js';
import { keysPage } from './keys-page.js';
import { refreshLimits, wireLimits } from './limits-panel.js';
import { poolPage } from './pool-page.js';
import { salePage } from './sale-page.js';

const PAGES = { sale: salePage, pool: poolPage, keys: keysPage, deliveries: deliveriesPage };

const WATCH_STORAGE = 'dibs.watch';
const REFRESH_MS = 2000;

const state = {
  pool: null,
  pools: [],
  sales: [],
  events: [],
  eventCursor: undefined,
  watch: loadWatch(),
  timer: null,
  /** The page shown: null for the overview, else { page, arg } from the address (#/sale/<id>, …). */
  view: null,
};

// --- log-in ----------------------------------------------------------------------------------

function showLogin(message = '') {
  $('app-view').hidden = true;
  $('login-view').hidden = false;
  $('login-error').textContent = message;
  $('api-key').value = '';
  $('api-key').focus();
}

function logout(message = '') {
  session.clear();
  clearInterval(state.timer);
  state.timer = null;
  forgetRendered();
  showLogin(message);
}
session.onUnauthorized = logout;

async function login(key) {
  session.key = key;
  const response = await fetch('/v1/pools?limit=1', { headers: authHeaders() });
  // 403 means the key is valid but cannot read pools: still a log-in; sections say what they cannot show.
  if (response.status === 401) throw new Error('That API key was not accepted.');
  if (!response.ok && response.status !== 403) throw new Error(`The service answered ${response.status}; try again.`);
  session.save(key);
  showApp();
}

function showApp() {
  $('login-view').hidden = true;
  $('app-view').hidden = false;
  route();
  state.timer = setInterval(() => document.visibilityState === 'visible' && refresh(), REFRESH_MS);
}

// --- refresh ---------------------------------------------------------------------------------

let refreshing = false;
let again = false;
/** One refresh at a time; a request during one (after an action) runs once more when it ends. */
async function refresh() {
  if (!session.key) return;
  if (refreshing) {
    again = true;
    return;
  }
  refreshing = true;
  again = false;
  try {
    const view = state.view;
    const parts = await Promise.allSettled(
      view
        ? [refreshHealth(), PAGES[view.page].refresh()]
        : [
            refreshHealth(),
            refreshPools(),
            refreshSales(),
            refreshEvents(),
            refreshOutbox(),
            refreshWatched(),
            refreshLimits(),
          ],
    );
    const failed = parts.find((p) => p.status === 'rejected' && p.reason?.status !== 401);
    $('updated').textContent = failed
      ? `update failed: ${failed.reason.message}`
      : `updated ${new Date().toLocaleTimeString()}`;
    if (session.key && !view)
      await refreshChart().catch((error) => error.status !== 401 && ($('chart-caption').textContent = describe(error)));
  } finally {
    refreshing = false;
  }
  if (again) refresh();
}

async function refreshHealth() {
  const response = await fetch('/readyz');
  const health = await response.json().catch(() => ({}));
  // Replicated Redis: the acknowledgement setting and each master's replicas, as health() reports them.
  const d = health.details ?? {};
  const replication = typeof d.acks === 'string' ? ` · acks ${d.acks.split(' (')[0]} · ${d.replication ?? ''}` : '';
  $('store').textContent =
    `${health.backend ?? '?'}${d.mode ? ` ${d.mode}` : ''}${health.ok === false ? ' (not ready)' : ''}${replication}`;
  $('store').title = typeof d.warning === 'string' ? d.warning : '';
}

async function listAll(path, max = 1000) {
  const items = [];
  let after;
  do {
    const page = await api(
      'GET',
      `${path}?limit=${Math.min(1000, max - items.length)}${after ? `&after=${enc(after)}` : ''}`,
    );
    items.push(...page.data);
    after = page.nextCursor;
  } while (after && items.length < max);
  return items;
}

async function refreshPools() {
  let pools;
  try {
    pools = await listAll('/v1/pools');
  } catch (error) {
    if (error.status === 401) throw error;
    renderRows('pool-rows', [], 8, () => [], describe(error));
    throw error;
  }
  state.pools = pools;
  if (!state.pool || !pools.some((p) => p.name === state.pool)) state.pool = pools[0]?.name ?? null;
  renderPoolSelect();
  renderRows(
    'pool-rows',
    pools.map((p) => ({ ...p, selected: p.name === state.pool })),
    8,
    (rows) =>
      rows.map((p) => {
        const s = p.stats;
        const out = s.claimed + s.redeemed;
        return h(
          'tr',
          { class: p.selected ? 'selected' : '', 'data-pool': p.name },
          h(
            'th',
            { scope: 'row' },
            h(
              'button',
              { type: 'button', class: 'link', 'aria-pressed': String(p.selected), onclick: () => selectPool(p.name) },
              p.name,
            ),
            ' ',
            h('a', { href: `#/pool/${enc(p.name)}`, 'aria-label': `Open pool ${p.name}` }, 'open'),
          ),
          h('td', { 'data-col': 'total', class: 'num' }, number(s.total)),
          h('td', { 'data-col': 'free', class: 'num' }, number(s.free)),
          h('td', { 'data-col': 'claimed', class: 'num' }, number(s.claimed)),
          // redemption count, against the pool's redemption limit when it has one
          h(
            'td',
            {
              'data-col': 'redeemed',
              class: 'num',
              title:
                p.maxRedemptions == null
                  ? 'codes redeemed'
                  : `${s.redeemed} of at most ${p.maxRedemptions} redemptions`,
            },
            p.maxRedemptions == null ? number(s.redeemed) : `${number(s.redeemed)} / ${number(p.maxRedemptions)}`,
          ),
          h('td', { 'data-col': 'revoked', class: 'num' }, number(s.revoked)),
          h(
            'td',
            {},
            h('meter', {
              min: 0,
              max: Math.max(1, s.total),
              value: out,
              title: `${out} of ${s.total}`,
              'aria-label': `${p.name}: ${out} of ${s.total} handed out`,
            }),
          ),
          h(
            'td',
            {},
            h(
              'button',
              {
                type: 'button',
                class: 'link',
                onclick: () => exportPool(p.name),
                'aria-label': `Export ${p.name} as CSV`,
              },
              'CSV',
            ),
          ),
        );
      }),
    'No pools yet — create one below.',
  );
}

function renderPoolSelect() {
  const select = $('pool-select');
  const names = state.pools.map((p) => p.name);
  const signature = JSON.stringify([names, state.pool]);
  if (select.dataset.signature === signature) return;
  select.dataset.signature = signature;
  select.replaceChildren(
    ...(names.length
      ? names.map((n) => h('option', { value: n, selected: n === state.pool }, n))
      : [h('option', { value: '' }, '— no pools yet —')]),
  );
}

function selectPool(name) {
  state.pool = name;
  forgetRendered('pool-rows');
  renderPoolSelect();
  refresh();
}

async function refreshChart() {
  const container = $('chart');
  if (!state.pool) {
    renderRateChart(container, [], { title: 'Claim rate' });
    $('chart-rows').replaceChildren();
    return;
  }
  const pool = state.pool;
  // the store's own forecast (every instance's claims, by the store's clock); absent on stores without it
  const [series, forecast] = await Promise.all([
    api('GET', `/v1/pools/${enc(pool)}/claim-rate`),
    api('GET', `/v1/pools/${enc(pool)}/forecast`).catch(() => null),
  ]);
  if (pool !== state.pool) return;
  container.dataset.pool = pool;
  const pace = forecast?.basis ? forecast.perMinute[forecast.basis] : null;
  renderRateChart(container, series.points, {
    title: `Claim rate of ${pool}`,
    forecast: pace === null ? null : { perMinute: pace, label: `forecast: ${forecastText(forecast)}` },
  });
  const last = series.points[series.points.length - 1];
  $('chart-caption').textContent =
    `${pool}: ${last ? `${last.perMinute} per minute now, ${last.handedOut} handed out` : 'no samples yet'} · sampled by the service every ${series.everyMs / 1000} s while watched.${forecast ? ` Forecast: ${forecastText(forecast)}.` : ''}`;
  $('chart-rows').replaceChildren(
    ...series.points
      .slice(-20)
      .reverse()
      .map((p) =>
        h(
          'tr',
          {},
          h('td', {}, new Date(p.at).toLocaleTimeString()),
          h('td', { class: 'num' }, number(p.handedOut)),
          h('td', { class: 'num' }, String(p.perMinute)),
        ),
      ),
  );
}

async function refreshSales() {
  let sales;
  try {
    sales = await listAll('/v1/sales');
  } catch (error) {
    if (error.status === 401) throw error;
    // A store without flash sales answers 501: say so instead of an error.
    renderRows('sale-rows', [], 6, () => [], error.status === 501 ? 'This store has no flash sales.' : describe(error));
    if (error.status === 501) return;
    throw error;
  }
  state.sales = sales;
  renderRows(
    'sale-rows',
    sales,
    6,
    (rows) =>
      rows.map((s) =>
        h(
          'tr',
          { 'data-sale': s.id },
          h(
            'th',
            { scope: 'row' },
            h('a', { href: `#/sale/${enc(s.id)}`, 'aria-label': `Open sale ${s.id}` }, h('code', {}, s.id)),
          ),
          h('td', {}, s.sku),
          h('td', {}, h('span', { class: 'status' }, s.status)),
          h(
            'td',
            {},
            h(
              'span',
              { class: 'countdown', 'data-starts': s.startsAt, 'data-ends': s.endsAt, 'data-status': s.status },
              countdown(s),
            ),
          ),
          h(
            'td',
            {},
            `${number(s.stats.sold)} / ${number(s.cap)}`,
            s.cap
              ? h('meter', {
                  min: 0,
                  max: s.cap,
                  value: s.stats.sold,
                  'aria-label': `${s.id}: ${s.stats.sold} of ${s.cap} sold`,
                })
              : null,
          ),
          h('td', { class: 'num' }, number(s.stats.held)),
        ),
      ),
    'No sales yet.',
  );
  tickCountdowns();
}

function countdown({ startsAt, endsAt, status }) {
  const now = Date.now();
  const starts = Date.parse(startsAt);
  const ends = Date.parse(endsAt);
  if (status === 'cancelled') return 'cancelled';
  if (now < starts) return `starts in ${duration(starts - now)}`;
  if (now < ends) return `ends in ${duration(ends - now)}`;
  return `ended ${new Date(ends).toLocaleString()}`;
}

/** Countdowns tick every second in place (text only), without re-rendering the rows. */
function tickCountdowns() {
  for (const node of document.querySelectorAll('.countdown')) {
    node.textContent = countdown({
      startsAt: node.dataset.starts,
      endsAt: node.dataset.ends,
      status: node.dataset.status,
    });
  }
}

async function refreshEvents() {
  // Events are listed oldest first after a cursor: the first load pages to the end, later loads
  // only fetch what is new. The page keeps the newest 50.
  for (let pages = 0; pages < 100; pages++) {
    const page = await api(
      'GET',
      `/v1/events?limit=1000${state.eventCursor ? `&after=${enc(state.eventCursor)}` : ''}`,
    );
    const batch = page.data;
    if (batch.length) state.events = [...state.events, ...batch].slice(-50);
    // A nextCursor (when the API gives one) may skip events this key cannot see; without one, a
    // full page means there may be more.
    const next = 'nextCursor' in page ? page.nextCursor : batch.length === 1000 ? batch[batch.length - 1].id : null;
    state.eventCursor = next ?? (batch.length ? batch[batch.length - 1].id : state.eventCursor);
    if (!next) break;
  }
  const newest = [...state.events].reverse();
  renderRows(
    'event-rows',
    newest,
    5,
    (rows) =>
      rows.map((e) => {
        const subject = e.payload?.pool ?? e.payload?.sale ?? e.payload?.sku ?? '';
        return h(
          'tr',
          {},
          h('th', { scope: 'row' }, h('code', {}, e.id)),
          h('td', {}, e.type),
          h('td', {}, String(subject)),
          h('td', {}, new Date(e.createdAt).toLocaleString()),
          h(
            'td',
            {},
            h(
              'button',
              {
                type: 'button',
                class: 'link',
                onclick: () => showDeliveries(e),
                'aria-label': `Show deliveries of event ${e.id}`,
              },
              'show',
            ),
          ),
        );
      }),
    'No events yet.',
  );
}

async function refreshOutbox() {
  try {
    const s = await api('GET', '/v1/outbox');
    $('outbox').textContent =
      `Outbox: ${number(s.pending)} pending · ${number(s.delivered)} delivered · ${number(s.dead)} dead letters · lag ${duration(s.oldestPendingMs)}`;
  } catch (error) {
    if (error.status === 401) throw error;
    $('outbox').textContent = error.status === 501 ? 'Outbox: this store has no outbox.' : `Outbox: ${describe(error)}`;
  }
}

async function showDeliveries(event) {
  const panel = $('deliveries');
  panel.hidden = false;
  try {
    const { data } = await api('GET', `/v1/events/${enc(event.id)}/deliveries`);
    panel.replaceChildren(
      h('h3', {}, `Deliveries of event ${event.id} (${event.type})`),
      data.length
        ? h(
            'table',
            {},
            h(
              'thead',
              {},
              h(
                'tr',
                {},
                h('th', { scope: 'col' }, 'Attempt'),
                h('th', { scope: 'col' }, 'Result'),
                h('th', { scope: 'col' }, 'Detail'),
                h('th', { scope: 'col' }, 'At'),
              ),
            ),
            h(
              'tbody',
              {},
              data.map((d) =>
                h(
                  'tr',
                  {},
                  h('td', {}, String(d.attempt)),
                  h('td', {}, d.ok ? 'delivered' : 'failed'),
                  h('td', {}, d.detail),
                  h('td', {}, new Date(d.at).toLocaleString()),
                ),
              ),
            ),
          )
        : h('p', { class: 'hint' }, 'No delivery attempts yet.'),
      h(
        'button',
        {
          type: 'button',
          class: 'secondary',
          onclick: () => {
            panel.hidden = true;
          },
        },
        'Close',
      ),
    );
  } catch (error) {
    panel.replaceChildren(h('p', { class: 'error' }, describe(error)));
  }
}

// --- locks and counters (watched names live in localStorage: not secret, worth keeping) -----

function loadWatch() {
  try {
    const value = JSON.parse(localStorage.getItem(WATCH_STORAGE) ?? '{}');
    return {
      locks: Array.isArray(value.locks) ? value.locks : [],
      counters: Array.isArray(value.counters) ? value.counters : [],
    };
  } catch {
    return { locks: [], counters: [] };
  }
}

function saveWatch() {
  localStorage.setItem(WATCH_STORAGE, JSON.stringify(state.watch));
}

const LIST_LIMIT = 50;

/**
 * Locks and counters: the store's list (first LIST_LIMIT, when the store can list them) and the
 * names watched in this browser (for stores that cannot, or beyond the first page).
 */
async function refreshWatched() {
  const settle = (promise) =>
    promise.then(
      (value) => ({ value }),
      (error) => {
        if (error.status === 401) throw error;
        return { error };
      },
    );
  const [lockList, counterList] = await Promise.all([
    settle(api('GET', `/v1/locks?limit=${LIST_LIMIT}`)),
    settle(api('GET', `/v1/counters?limit=${LIST_LIMIT}`)),
  ]);
  const listed = (result, name) => new Map((result.value?.data ?? []).map((item) => [item[name], { value: item }]));
  const lockMap = listed(lockList, 'key');
  const counterMap = listed(counterList, 'name');
  const extra = async (names, map, path) => {
    await Promise.all(
      names.filter((n) => !map.has(n)).map(async (n) => map.set(n, await settle(api('GET', `${path}/${enc(n)}`)))),
    );
    return [...map.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  };
  const locks = (await extra(state.watch.locks, lockMap, '/v1/locks')).map(([key, r]) => ({ key, ...r }));
  const counters = (await extra(state.watch.counters, counterMap, '/v1/counters')).map(([name, r]) => ({ name, ...r }));
  const canList = !lockList.error && !counterList.error;
  $('watch-hint').textContent = canList
    ? `Listed by the store (the first ${LIST_LIMIT} of each, by name), with any others you watch (remembered in this browser).`
    : `${lockList.error?.status === 501 || counterList.error?.status === 501 ? 'This store does not list lock or counter names' : `Could not list them: ${describe(lockList.error ?? counterList.error)}`}; add the ones to watch (remembered in this browser).`;
  const unwatch = (kind, name) => () => {
    state.watch[kind] = state.watch[kind].filter((n) => n !== name);
    saveWatch();
    refresh();
  };
  const watchCell = (kind, name, what) =>
    h(
      'td',
      {},
      state.watch[kind].includes(name)
        ? h(
            'button',
            {
              type: 'button',
              class: 'link',
              onclick: unwatch(kind, name),
              'aria-label': `Stop watching ${what} ${name}`,
            },
            'stop watching',
          )
        : null,
    );
  renderRows(
    'lock-rows',
    locks.map((l) => ({
      key: l.key,
      value: l.value,
      error: l.error?.message,
      watched: state.watch.locks.includes(l.key),
    })),
    5,
    (rows) =>
      rows.map((l) =>
        h(
          'tr',
          { 'data-lock': l.key },
          h('th', { scope: 'row' }, h('code', {}, l.key)),
          l.error
            ? h('td', { colSpan: 3, class: 'error' }, l.error)
            : [
                h(
                  'td',
                  {},
                  l.value.holders.length
                    ? h(
                        'ul',
                        { class: 'holders' },
                        l.value.holders.map((x) =>
                          h(
                            'li',
                            {},
                            h('code', {}, `${x.tokenPrefix}…`),
                            ` · fence ${x.fence} · expires in ${duration(Date.parse(x.expiresAt) - Date.now())}`,
                          ),
                        ),
                      )
                    : h('span', { class: 'hint' }, 'free'),
                ),
                h('td', { class: 'num' }, String(l.value.waiters)),
                h('td', { class: 'num' }, String(l.value.lastFence)),
              ],
          watchCell('locks', l.key, 'lock'),
        ),
      ),
    canList ? 'No locks yet.' : 'No locks watched.',
  );
  renderRows(
    'counter-rows',
    counters.map((c) => ({
      name: c.name,
      value: c.value,
      error: c.error?.message,
      watched: state.watch.counters.includes(c.name),
    })),
    4,
    (rows) =>
      rows.map((c) =>
        h(
          'tr',
          { 'data-counter': c.name },
          h('th', { scope: 'row' }, h('code', {}, c.name)),
          c.error
            ? h('td', { colSpan: 2, class: 'error' }, c.error)
            : [h('td', { class: 'num' }, number(c.value.value)), h('td', { class: 'num' }, String(c.value.shards))],
          watchCell('counters', c.name, 'counter'),
        ),
      ),
    canList ? 'No counters yet.' : 'No counters watched.',
  );
}

// --- actions ---------------------------------------------------------------------------------

async function exportPool(name) {
  try {
    await download(`/v1/pools/${enc(name)}/export`, `${name}.csv`);
    toast(`Exported ${name}.csv`);
  } catch (error) {
    if (error.status !== 401) toast(`Export failed: ${describe(error)}`);
  }
}

function requirePool() {
  if (!state.pool) throw new Error('Create or select a pool first.');
  return state.pool;
}

function wire() {
  $('login-form').addEventListener('submit', async (event) => {
    event.preventDefault();
    const key = $('api-key').value.trim();
    if (!key) {
      $('login-error').textContent = 'Enter an API key.';
      return;
    }
    try {
      await login(key);
    } catch (error) {
      session.key = null;
      $('login-error').textContent = error.message;
    }
  });
  $('logout').addEventListener('click', () => logout('Logged out.'));
  // The skip link moves focus only: changing the address to #main would leave a detail page.
  document.querySelector('.skip').addEventListener('click', (event) => {
    event.preventDefault();
    $('main').focus();
  });
  $('pool-select').addEventListener('change', (event) => event.target.value && selectPool(event.target.value));

  onSubmit('create-form', 'create-result', async (form) => {
    const name = form.elements.name.value.trim();
    const body = { name, perClaimantLimit: Number(form.elements.perClaimantLimit.value) };
    if (form.elements.lowStockThreshold.value !== '')
      body.lowStockThreshold = Number(form.elements.lowStockThreshold.value);
    await api('POST', '/v1/pools', { body });
    form.elements.name.value = '';
    selectPool(name);
    return `Created pool ${name}; it is now selected.`;
  });

  onSubmit('import-form', 'import-result', async (form) => {
    const pool = requirePool();
    const file = form.elements.file.files[0];
    const bar = $('import-progress');
    bar.hidden = false;
    bar.value = 0;
    try {
      const result = await upload(`/v1/pools/${enc(pool)}/codes`, file, (fraction) => {
        if (fraction < 1) {
          bar.value = Math.round(fraction * 100);
          return;
        }
        // The store imports as the upload streams in; the last batches commit after the last byte.
        bar.removeAttribute('value'); // indeterminate until the answer
        showResult('import-result', `Uploaded ${file.name}; ${pool} is committing the last batches…`, true);
      });
      bar.value = 100;
      form.reset();
      refresh();
      const first = result.firstInvalid
        ? ` First skipped: line ${result.firstInvalid.line}, ${result.firstInvalid.field}: ${result.firstInvalid.message}.`
        : '';
      return `Imported ${number(result.imported)} codes into ${pool} (${number(result.duplicates)} duplicates, ${number(result.invalid)} invalid).${first}`;
    } finally {
      setTimeout(() => {
        bar.hidden = true;
      }, 1500);
    }
  });

  onSubmit('claim-form', 'claim-result', async (form) => {
    const pool = requirePool();
    const claimant = form.elements.claimant.value.trim();
    const result = await api('POST', `/v1/pools/${enc(pool)}/claims`, { body: { claimant } });
    refresh();
    return result.status === 'claimed'
      ? `${claimant} got ${result.code}`
      : `${claimant} already holds ${result.code} (limit reached)`;
  });

  $('lock-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const key = $('lock-key').value.trim();
    if (key && !state.watch.locks.includes(key)) state.watch.locks.push(key);
    saveWatch();
    $('lock-key').value = '';
    refresh();
  });
  $('counter-form').addEventListener('submit', (event) => {
    event.preventDefault();
    const name = $('counter-name').value.trim();
    if (name && !state.watch.counters.includes(name)) state.watch.counters.push(name);
    saveWatch();
    $('counter-name').value = '';
    refresh();
  });

  setInterval(tickCountdowns, 1000);
  wireLimits(refresh);
  for (const page of Object.values(PAGES)) page.wire();
}

// --- pages: the address says which (#/sale/<id>, #/pool/<name>, #/keys, #/deliveries; anything else is the overview)

function route() {
  const match = /^#\/(sale|pool|keys|deliveries)(?:\/(.+))?$/.exec(location.hash);
  const next = match ? { page: match[1], arg: match[2] === undefined ? null : decodeURIComponent(match[2]) } : null;
  const previous = state.view;
  state.view = next;
  $('overview').hidden = next !== null;
  for (const [name, page] of Object.entries(PAGES)) {
    const shown = next?.page === name;
    $(`${name}-page`).hidden = !shown;
    if (shown) page.show(next.arg, { refresh });
    else if (previous?.page === name) page.hide();
  }
  for (const link of document.querySelectorAll('.top nav a')) {
    const current = next ? link.getAttribute('href') === `#/${next.page}` : link.getAttribute('href') === location.hash;
    if (current) link.setAttribute('aria-current', 'page');
    else link.removeAttribute('aria-current');
  }
  if (next) {
    // a new page: move focus to its heading so keyboard and screen-reader users start there
    $(`${next.page}-h`).focus();
  } else if (previous && location.hash.length > 1) {
    document.getElementById(location.hash.slice(1))?.scrollIntoView();
  }
  refresh();
}

wire();
window.addEventListener('hashchange', () => session.key && route());
if (session.key) showApp();
else showLogin();
