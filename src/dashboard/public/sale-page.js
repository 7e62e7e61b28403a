// The sale page (#/sale/<id>): units over time, countdowns, the waiting room's line and admission
// rate, active holds (find a customer, cancel a hold), the forecast, edit and cancel — and the
// "Create a sale" form of the overview. Everything through the public /v1 API with the tab's key.
import { renderSeriesChart } from './chart.js';
import {
  $,
  api,
  describe,
  duration,
  enc,
  forecastText,
  fromLocalInput,
  h,
  number,
  onSubmit,
  renderRows,
  showResult,
  toLocalInput,
} from './lib.js';

const MAX_SAMPLES = 600; // 20 minutes at one sample per 2 s
const RATE_WINDOW_MS = 30_000;
const LINES = [
  { key: 'sold', label: 'sold', cls: 's1' },
  { key: 'held', label: 'held', cls: 's2' },
  { key: 'available', label: 'available', cls: 's3' },
];

const page = {
  id: null,
  sale: null,
  series: [],
  /** [{ at: ms, through: tickets ever admitted }] for the observed admission rate */
  admissions: [],
  customer: '',
  editFilled: false,
  refreshAll: () => {},
};

function countdown(sale) {
  const now = Date.now();
  const starts = Date.parse(sale.startsAt);
  const ends = Date.parse(sale.endsAt);
  if (sale.status === 'cancelled') return 'cancelled';
  if (now < starts) return `starts in ${duration(starts - now)}`;
  if (now < ends) return `ends in ${duration(ends - now)}`;
  return `ended ${new Date(ends).toLocaleString()}`;
}

function tick() {
  if (!page.sale || $('sale-page').hidden) return;
  const s = page.sale;
  $('sale-summary').textContent =
    `SKU ${s.sku} · ${s.status.replace('_', ' ')} · ${countdown(s)} · ${number(s.perCustomerLimit)} per customer`;
  for (const node of document.querySelectorAll('#hold-rows [data-expires]')) {
    node.textContent = `in ${duration(Date.parse(node.dataset.expires) - Date.now())}`;
  }
}

function fillEdit(sale) {
  const form = $('sale-edit-form');
  form.elements.startsAt.value = toLocalInput(sale.startsAt);
  form.elements.endsAt.value = toLocalInput(sale.endsAt);
  form.elements.cap.value = sale.cap ?? '';
  form.elements.perCustomerLimit.value = sale.perCustomerLimit;
  page.editFilled = true;
}

async function refresh() {
  const id = page.id;
  if (!id) return;
  const optional = (promise, absent) =>
    promise.catch((error) => {
      if (error.status === 401) throw error;
      return absent(error);
    });
  const [sale, forecast, room, holds] = await Promise.all([
    api('GET', `/v1/sales/${enc(id)}`).catch((error) => {
      $('sale-error').textContent = error.status === 401 ? '' : describe(error);
      throw error;
    }),
    optional(api('GET', `/v1/sales/${enc(id)}/forecast`), () => null),
    optional(api('GET', `/v1/sales/${enc(id)}/waiting-room`), (error) => (error.status === 404 ? null : { error })),
    optional(
      api('GET', `/v1/sales/${enc(id)}/holds?limit=100${page.customer ? `&customer=${enc(page.customer)}` : ''}`),
      (error) => ({ error }),
    ),
  ]);
  if (id !== page.id) return;
  $('sale-error').textContent = '';
  page.sale = sale;
  renderStats(sale, forecast);
  renderRoom(sale, room);
  renderHolds(sale, holds);
  if (!page.editFilled) fillEdit(sale);
  $('sale-cancel').disabled = sale.status === 'cancelled';
  tick();
}

function renderStats(sale, forecast) {
  const { sold, held, available } = sale.stats;
  $('sale-sold').textContent = number(sold);
  $('sale-held').textContent = number(held);
  $('sale-available').textContent = sale.cap === null ? 'unlimited' : number(available);
  $('sale-cap').textContent = sale.cap === null ? 'unlimited' : number(sale.cap);
  $('sale-forecast').textContent = forecast ? forecastText(forecast, 'sold out') : '–';
  page.series.push({ at: new Date().toISOString(), sold, held, available });
  if (page.series.length > MAX_SAMPLES) page.series.shift();
  const container = $('sale-chart');
  container.dataset.sale = sale.id;
  renderSeriesChart(container, page.series, {
    title: `Units of sale ${sale.id}`,
    lines: sale.cap === null ? LINES.slice(0, 2) : LINES,
  });
  $('sale-chart-rows').replaceChildren(
    ...page.series
      .slice(-20)
      .reverse()
      .map((p) =>
        h(
          'tr',
          {},
          h('td', {}, new Date(p.at).toLocaleTimeString()),
          h('td', { class: 'num' }, number(p.sold)),
          h('td', { class: 'num' }, number(p.held)),
          h('td', { class: 'num' }, p.available === null ? 'unlimited' : number(p.available)),
        ),
      ),
  );
}

function renderRoom(sale, room) {
  const submit = $('room-submit');
  if (room === null) {
    $('room-stats').hidden = true;
    $('room-summary').textContent =
      sale.cap === null
        ? 'No waiting room (an unlimited sale cannot have one: give it a cap first).'
        : 'No waiting room: buyers buy directly. Add one to let them in at a steady rate, in arrival order.';
    submit.textContent = 'Add waiting room';
    return;
  }
  if (room.error) {
    $('room-summary').textContent = describe(room.error);
    return;
  }
  $('room-stats').hidden = false;
  for (const [status, count] of Object.entries(room.tickets)) {
    const node = $(`room-${status}`);
    if (node) node.textContent = number(count);
  }
  // tickets ever admitted (admitted now, used, or whose window passed) grow at the admission rate
  const through = room.tickets.admitted + room.tickets.used + room.tickets.expired;
  const now = Date.now();
  page.admissions.push({ at: now, through });
  while (page.admissions.length > 2 && now - page.admissions[1].at > RATE_WINDOW_MS) page.admissions.shift();
  const first = page.admissions[0];
  const observed = now - first.at >= 1000 ? (through - first.through) / ((now - first.at) / 60_000) : null;
  $('room-summary').textContent =
    `Admits up to ${room.admitPerSecond}/s (${room.admitPerSecond * 60}/min); each admitted customer has ${duration(room.windowMs)} to reserve.` +
    (observed === null ? '' : ` Admitted lately: ${Math.round(observed)}/min (last ${duration(now - first.at)}).`) +
    (room.fairStart
      ? room.draw
        ? ` Fair start: ${number(room.draw.preQueue)} early arrivals placed by the draw (seed ${room.draw.seed}).`
        : ' Fair start: early arrivals get a random place at the opening.'
      : '') +
    (room.verification ? ' Tickets are admitted only once verified.' : '');
  $('room-stats').dataset.observedPerMinute = observed === null ? '' : String(Math.round(observed));
  submit.textContent = 'Save waiting room';
  const form = $('room-form');
  if (!form.dataset.filled) {
    form.elements.admitPerSecond.value = room.admitPerSecond;
    form.elements.windowS.value = Math.round(room.windowMs / 1000);
    form.dataset.filled = 'true';
  }
}

function renderHolds(_sale, holds) {
  const summary = page.customer ? `Holds of ${page.customer}` : 'Soonest expiry first (first 100).';
  if (holds.error) {
    renderRows(
      'hold-rows',
      [],
      4,
      () => [],
      holds.error.status === 501 ? 'This store cannot list holds.' : describe(holds.error),
    );
    $('holds-summary').textContent = summary;
    return;
  }
  $('holds-summary').textContent = page.customer
    ? holds.data.length
      ? `${page.customer} holds ${holds.data[0].quantity} unit(s).`
      : `${page.customer} has no active hold.`
    : `${holds.data.length} active hold${holds.data.length === 1 ? '' : 's'} shown, soonest expiry first.`;
  renderRows(
    'hold-rows',
    holds.data,
    4,
    (rows) =>
      rows.map((hold) =>
        h(
          'tr',
          { 'data-hold': hold.id, 'data-customer': hold.customer },
          h('th', { scope: 'row' }, hold.customer),
          h('td', { class: 'num' }, number(hold.quantity)),
          h(
            'td',
            { title: new Date(hold.expiresAt).toLocaleString() },
            h('span', { 'data-expires': hold.expiresAt }, `in ${duration(Date.parse(hold.expiresAt) - Date.now())}`),
          ),
          h(
            'td',
            {},
            h(
              'button',
              {
                type: 'button',
                class: 'link',
                'aria-label': `Cancel the hold of ${hold.customer}`,
                onclick: (event) => cancelHold(hold, event.currentTarget),
              },
              'cancel hold',
            ),
          ),
        ),
      ),
    page.customer ? `${page.customer} has no active hold.` : 'No active holds.',
  );
}

async function cancelHold(hold, button) {
  button.disabled = true;
  try {
    await api('POST', `/v1/reservations/${enc(hold.id)}/cancel`);
    showResult(
      'hold-result',
      `Cancelled the hold of ${hold.customer} (${hold.quantity} unit${hold.quantity === 1 ? '' : 's'} back on sale).`,
      true,
    );
    page.refreshAll();
  } catch (error) {
    button.disabled = false;
    if (error.status !== 401)
      showResult('hold-result', `Could not cancel the hold of ${hold.customer}: ${describe(error)}`, false);
  }
}

function wire() {
  const create = $('sale-create-form');
  create.elements.startsAt.value = toLocalInput(new Date(Date.now() + 60_000).toISOString());
  create.elements.endsAt.value = toLocalInput(new Date(Date.now() + 3_600_000).toISOString());
  onSubmit('sale-create-form', 'sale-create-result', async (form) => {
    const f = form.elements;
    const body = {
      sku: f.sku.value.trim(),
      startsAt: fromLocalInput(f.startsAt.value),
      endsAt: fromLocalInput(f.endsAt.value),
      perCustomerLimit: Number(f.perCustomerLimit.value),
      cap: f.cap.value === '' ? null : Number(f.cap.value),
    };
    if (f.id.value.trim()) body.id = f.id.value.trim();
    const sale = await api('POST', '/v1/sales', { body });
    if (f.admitPerSecond.value !== '') {
      try {
        await api('PUT', `/v1/sales/${enc(sale.id)}/waiting-room`, {
          body: { admitPerSecond: Number(f.admitPerSecond.value), windowMs: 60_000 },
        });
      } catch (error) {
        if (error.status === 401) throw error;
        location.hash = `#/sale/${enc(sale.id)}`;
        throw Object.assign(
          new Error(`Created sale ${sale.id}, but its waiting room was refused: ${describe(error)}`),
          { status: error.status },
        );
      }
    }
    f.id.value = '';
    location.hash = `#/sale/${enc(sale.id)}`;
    return `Created sale ${sale.id}.`;
  });

  onSubmit('sale-edit-form', 'sale-edit-result', async (form) => {
    const f = form.elements;
    const sale = await api('PATCH', `/v1/sales/${enc(page.id)}`, {
      body: {
        startsAt: fromLocalInput(f.startsAt.value),
        endsAt: fromLocalInput(f.endsAt.value),
        cap: f.cap.value === '' ? null : Number(f.cap.value),
        perCustomerLimit: Number(f.perCustomerLimit.value),
      },
    });
    fillEdit(sale);
    page.refreshAll();
    return `Saved: ${sale.id} now ${countdown(sale)}, cap ${sale.cap ?? 'unlimited'}, ${sale.perCustomerLimit} per customer.`;
  });

  onSubmit('room-form', 'room-result', async (form) => {
    const room = await api('PUT', `/v1/sales/${enc(page.id)}/waiting-room`, {
      body: {
        admitPerSecond: Number(form.elements.admitPerSecond.value),
        windowMs: Number(form.elements.windowS.value) * 1000,
      },
    });
    page.refreshAll();
    return `Waiting room admits ${room.admitPerSecond}/s, ${duration(room.windowMs)} to reserve.`;
  });

  $('hold-find-form').addEventListener('submit', (event) => {
    event.preventDefault();
    page.customer = $('hold-customer').value.trim();
    page.refreshAll();
  });

  const confirmBox = $('sale-cancel-confirm');
  $('sale-cancel').addEventListener('click', () => {
    confirmBox.hidden = false;
    $('sale-cancel-no').focus();
  });
  $('sale-cancel-no').addEventListener('click', () => {
    confirmBox.hidden = true;
    $('sale-cancel').focus();
  });
  $('sale-cancel-yes').addEventListener('click', async () => {
    confirmBox.hidden = true;
    try {
      const sale = await api('POST', `/v1/sales/${enc(page.id)}/cancel`);
      showResult('sale-cancel-result', `Sale ${sale.id} is cancelled.`, true);
      page.refreshAll();
    } catch (error) {
      if (error.status !== 401) showResult('sale-cancel-result', describe(error), false);
    }
    $('sale-cancel').focus();
  });
  setInterval(tick, 1000);
}

export const salePage = {
  wire,
  show(id, { refresh: refreshAll }) {
    page.refreshAll = refreshAll;
    if (id === page.id) return;
    Object.assign(page, { id, sale: null, series: [], admissions: [], customer: '', editFilled: false });
    $('sale-title').textContent = id;
    $('hold-customer').value = '';
    $('room-form').dataset.filled = '';
    for (const result of ['sale-edit-result', 'room-result', 'sale-cancel-result', 'hold-result'])
      $(result).textContent = '';
    $('sale-cancel-confirm').hidden = true;
    renderSeriesChart($('sale-chart'), [], { title: `Units of sale ${id}`, lines: LINES });
  },
  hide() {},
  refresh,
};
