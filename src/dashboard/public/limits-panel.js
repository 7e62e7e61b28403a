// The rate-limits section of the overview: every limit of the tenant with its definition in words,
// a form that defines a limit or changes one (Edit fills it in), and a key's allowance — take units
// as a client would (allowed and what is left, or the exact wait), read it without taking, or reset
// the key. Each row shows the shared allowance as it is now (read without taking). Through the
// public /v1/limits API (scopes locks:read / locks:write).
import { $, api, describe, duration, enc, h, number, onSubmit, renderRows, showResult } from './lib.js';

const ALGORITHMS = { 'token-bucket': 'token bucket', 'sliding-window': 'sliding window', quota: 'quota' };
const UNITS = [86_400_000, 3_600_000, 60_000, 1000, 1];

const panel = { limits: [], confirming: null, refresh: null };

/** "minute", "10 seconds", "1500 ms": a period in the largest unit that divides it. */
export function periodText(ms) {
  for (const [unit, word] of [
    [86_400_000, 'day'],
    [3_600_000, 'hour'],
    [60_000, 'minute'],
    [1000, 'second'],
  ])
    if (ms % unit === 0) return ms === unit ? word : `${number(ms / unit)} ${word}s`;
  return `${number(ms)} ms`;
}

/** "30 per second, bursts up to 5" — what the definition admits, in the words of docs/limits.md. */
export function allowance(limit) {
  const period = periodText(limit.periodMs);
  if (limit.algorithm === 'token-bucket')
    return `${number(limit.limit)} per ${period}, refilled continuously; bursts up to ${number(limit.burst)}`;
  if (limit.algorithm === 'sliding-window')
    return `at most ${number(limit.limit)} in any ${period} (${limit.segments} segments)`;
  return `${number(limit.limit)} per calendar ${period} (UTC-aligned)`;
}

export async function refreshLimits() {
  let limits;
  try {
    limits = (await api('GET', '/v1/limits')).data;
  } catch (error) {
    if (error.status === 401) throw error;
    renderRows('limit-rows', [], 6, () => [], `Could not list limits: ${describe(error)}`);
    return;
  }
  panel.limits = limits;
  // the shared allowance ("" key) of each limit, read without taking; a store that cannot: "—"
  const shared = await Promise.all(
    limits.map((limit) =>
      api('GET', `/v1/limits/${enc(limit.name)}/peek`).then(
        (d) => (d.allowed ? `${number(d.remaining + 1)} left` : 'none left'),
        (error) => {
          if (error.status === 401) throw error;
          return '—';
        },
      ),
    ),
  );
  renderRows(
    'limit-rows',
    limits.map((limit, i) => ({ ...limit, shared: shared[i], confirming: panel.confirming === limit.name })),
    6,
    (rows) =>
      rows.map((limit) =>
        h(
          'tr',
          { 'data-limit': limit.name },
          h('th', { scope: 'row' }, limit.name),
          h('td', {}, ALGORITHMS[limit.algorithm] ?? limit.algorithm),
          h('td', {}, allowance(limit)),
          h('td', { class: 'num' }, limit.shared),
          h('td', {}, new Date(limit.updatedAt).toLocaleString()),
          h(
            'td',
            {},
            h(
              'button',
              { type: 'button', class: 'link', onclick: () => edit(limit), 'aria-label': `Edit limit ${limit.name}` },
              'edit',
            ),
            ' ',
            // deleting asks once more: the first click turns the button into the confirmation
            h(
              'button',
              {
                type: 'button',
                class: 'link delete',
                onclick: () => remove(limit.name),
                'aria-label': limit.confirming ? `Confirm deleting limit ${limit.name}` : `Delete limit ${limit.name}`,
              },
              limit.confirming ? 'confirm delete' : 'delete',
            ),
          ),
        ),
      ),
    'No limits yet — define one below.',
  );
  const select = $('limit-try-name');
  const chosen = select.value;
  const names = limits.map((l) => l.name);
  if (select.dataset.names !== JSON.stringify(names)) {
    select.dataset.names = JSON.stringify(names);
    select.replaceChildren(
      ...(names.length
        ? names.map((n) => h('option', { value: n }, n))
        : [h('option', { value: '' }, '— no limits yet —')]),
    );
    if (names.includes(chosen)) select.value = chosen;
  }
}

/** Fills the form with a limit's definition (its period in the largest whole unit). */
function edit(limit) {
  const form = $('limit-form');
  form.elements.name.value = limit.name;
  form.elements.algorithm.value = limit.algorithm;
  form.elements.limit.value = limit.limit;
  const unit = UNITS.find((u) => limit.periodMs % u === 0) ?? 1;
  form.elements.unit.value = String(unit);
  form.elements.period.value = limit.periodMs / unit;
  form.elements.burst.value = limit.algorithm === 'token-bucket' ? limit.burst : '';
  form.elements.segments.value = limit.algorithm === 'sliding-window' ? limit.segments : '';
  $('limit-result').textContent = `Editing ${limit.name}: change the fields and save.`;
  form.elements.limit.focus();
}

async function remove(name) {
  if (panel.confirming !== name) {
    panel.confirming = name;
    await refreshLimits();
    document.querySelector(`tr[data-limit="${CSS.escape(name)}"] .delete`)?.focus();
    return;
  }
  panel.confirming = null;
  try {
    await api('DELETE', `/v1/limits/${enc(name)}`);
    showResult('limit-result', `Deleted ${name} and every key's count.`, true);
  } catch (error) {
    if (error.status !== 401) showResult('limit-result', describe(error), false);
  }
  panel.refresh?.();
}

function definitionOf(form) {
  const periodMs = Math.round(Number(form.elements.period.value) * Number(form.elements.unit.value));
  const body = { algorithm: form.elements.algorithm.value, limit: Number(form.elements.limit.value), periodMs };
  if (form.elements.burst.value !== '') body.burst = Number(form.elements.burst.value);
  if (form.elements.segments.value !== '') body.segments = Number(form.elements.segments.value);
  return body;
}

export function wireLimits(refresh) {
  panel.refresh = refresh;
  onSubmit('limit-form', 'limit-result', async (form) => {
    const name = form.elements.name.value.trim();
    const body = definitionOf(form);
    const exists = panel.limits.some((l) => l.name === name);
    const saved = exists
      ? await api('PATCH', `/v1/limits/${enc(name)}`, { body })
      : await api('POST', '/v1/limits', { body: { name, ...body } });
    refresh();
    return `${exists ? 'Changed' : 'Defined'} ${saved.name}: ${allowance(saved)}.`;
  });
  const target = () => {
    const form = $('limit-try-form');
    const key = form.elements.key.value;
    return { form, name: form.elements.name.value, key, who: key ? `key ${key}` : 'the shared allowance' };
  };
  onSubmit('limit-try-form', 'limit-try-result', async () => {
    const { form, name, key, who } = target();
    const n = Number(form.elements.n.value);
    const d = await api('POST', `/v1/limits/${enc(name)}/take`, { body: { key, n } });
    if (d.allowed) return `Allowed: ${n} taken for ${who}; ${number(d.remaining)} left now.`;
    showResult(
      'limit-try-result',
      `Denied for ${who}: ${number(d.remaining)} left now; ${n} would be allowed in ${waitText(d.retryAfterMs)}.`,
      false,
    );
    return null;
  });
  $('limit-peek').addEventListener('click', async () => {
    const { form, name, key, who } = target();
    if (!form.reportValidity()) return;
    const n = Number(form.elements.n.value);
    try {
      const d = await api('GET', `/v1/limits/${enc(name)}/peek?n=${n}&key=${enc(key)}`);
      showResult(
        'limit-try-result',
        d.allowed
          ? `${name}, ${who}: ${number(d.remaining + n)} left now; nothing taken.`
          : `${name}, ${who}: ${number(d.remaining)} left now; ${n} would be allowed in ${waitText(d.retryAfterMs)}. Nothing taken.`,
        true,
      );
    } catch (error) {
      if (error.status !== 401) showResult('limit-try-result', describe(error), false);
    }
  });
  $('limit-reset').addEventListener('click', async () => {
    const { form, name, key, who } = target();
    if (!form.elements.name.reportValidity()) return;
    try {
      await api('POST', `/v1/limits/${enc(name)}/reset`, { body: { key } });
      showResult('limit-try-result', `Reset ${who} of ${name}: its next take starts from a full allowance.`, true);
    } catch (error) {
      if (error.status !== 401) showResult('limit-try-result', describe(error), false);
    }
  });
}

const waitText = (ms) => (ms < 1000 ? `${ms} ms` : duration(ms));
