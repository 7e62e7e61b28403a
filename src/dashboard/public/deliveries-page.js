// The events & deliveries page (#/deliveries): the outbox's state, each endpoint's success rate,
// the dead letters with "retry now", and a retry by event id for one waiting for its next try.
// Through the operator's /v1/outbox* and /v1/events/:id/retry routes (admin of the default tenant).
import { $, api, describe, duration, enc, h, number, onSubmit, renderRows, showResult } from './lib.js';

const when = (iso) => (iso ? new Date(iso).toLocaleString() : '—');

async function refreshStatus() {
  try {
    const s = await api('GET', '/v1/outbox');
    $('dl-status').textContent =
      `Outbox: ${number(s.pending)} pending · ${number(s.delivered)} delivered · ${number(s.dead)} dead letters · lag ${duration(s.oldestPendingMs)}`;
  } catch (error) {
    if (error.status === 401) throw error;
    $('dl-status').textContent =
      error.status === 501 ? 'This store has no outbox: nothing is delivered.' : `Outbox: ${describe(error)}`;
  }
}

async function refreshEndpoints() {
  let answer;
  try {
    answer = await api('GET', '/v1/outbox/endpoints');
  } catch (error) {
    if (error.status === 401) throw error;
    renderRows(
      'dl-endpoint-rows',
      [],
      5,
      () => [],
      error.status === 501 ? 'This store has no outbox.' : describe(error),
    );
    return;
  }
  $('dl-endpoints-note').textContent = answer.dispatcher
    ? `Counted by this service instance's dispatcher since ${when(answer.since)} (each instance counts its own deliveries).`
    : 'This service instance runs no dispatcher (background jobs are off): another instance delivers the events.';
  renderRows(
    'dl-endpoint-rows',
    answer.data,
    5,
    (rows) =>
      rows.map((e) => {
        const rate = e.successRate === null ? null : Math.round(e.successRate * 1000) / 10;
        return h(
          'tr',
          { 'data-endpoint': e.endpoint },
          h('th', { scope: 'row' }, h('code', {}, e.endpoint)),
          h('td', { class: 'num' }, number(e.ok)),
          h('td', { class: 'num' }, number(e.failed)),
          h(
            'td',
            {},
            rate === null ? '—' : `${rate}%`,
            rate === null
              ? null
              : h('meter', {
                  min: 0,
                  max: 100,
                  low: 90,
                  optimum: 100,
                  value: rate,
                  'aria-label': `Success rate of ${e.endpoint}: ${rate}%`,
                }),
          ),
          h('td', {}, e.lastFailureAt ? `${when(e.lastFailureAt)}: ${e.lastError ?? ''}` : 'none'),
        );
      }),
    answer.dispatcher ? 'No deliveries attempted yet.' : 'Not counted here.',
  );
}

async function refreshDead() {
  let dead;
  try {
    dead = (await api('GET', '/v1/outbox/dead')).data;
  } catch (error) {
    if (error.status === 401) throw error;
    renderRows(
      'dl-dead-rows',
      [],
      6,
      () => [],
      error.status === 501 ? 'This store cannot list dead letters.' : describe(error),
    );
    return;
  }
  renderRows(
    'dl-dead-rows',
    dead,
    6,
    (rows) =>
      rows.map((e) =>
        h(
          'tr',
          { 'data-event': e.id },
          h('th', { scope: 'row' }, h('code', {}, e.id)),
          h('td', {}, e.type),
          h('td', { class: 'num' }, number(e.attempts)),
          h('td', {}, e.lastError),
          h('td', {}, when(e.deadAt)),
          h(
            'td',
            {},
            h(
              'button',
              {
                type: 'button',
                class: 'secondary',
                'aria-label': `Retry now: event ${e.id}`,
                onclick: (event) => retry(e.id, event.currentTarget),
              },
              'Retry now',
            ),
          ),
        ),
      ),
    'No dead letters.',
  );
}

async function retry(id, button) {
  if (button) button.disabled = true;
  try {
    await api('POST', `/v1/events/${enc(id)}/retry`);
    showResult('dl-result', `Event ${id} is due again: the dispatcher retries it on its next run.`, true);
    await refresh();
  } catch (error) {
    if (button) button.disabled = false;
    if (error.status !== 401) showResult('dl-result', `Event ${id}: ${describe(error)}`, false);
  }
}

async function refresh() {
  await Promise.all([refreshStatus(), refreshEndpoints(), refreshDead()]);
}

function wire() {
  onSubmit('dl-retry-form', 'dl-result', async (form) => {
    const id = form.elements.id.value.trim();
    await api('POST', `/v1/events/${enc(id)}/retry`);
    form.reset();
    await refresh();
    return `Event ${id} is due again: the dispatcher retries it on its next run.`;
  });
}

export const deliveriesPage = { wire, show() {}, hide() {}, refresh };
