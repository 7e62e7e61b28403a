// A small SVG line chart (no library: the page must load nothing from elsewhere, and a rate-over-time
// line is ~80 lines). Built with DOM calls, never markup strings, so it works under a strict CSP.
const NS = 'http://www.w3.org/2000/svg';
const W = 640;
const H = 220;
const PAD = { left: 48, right: 12, top: 12, bottom: 28 };

function el(name, attrs = {}, text) {
  const node = document.createElementNS(NS, name);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, String(v));
  if (text !== undefined) node.textContent = text;
  return node;
}

/** 1, 2 or 5 × a power of ten, at least `value`: round numbers for the y axis. */
function niceCeil(value) {
  if (value <= 0) return 1;
  const power = 10 ** Math.floor(Math.log10(value));
  for (const step of [1, 2, 5, 10]) if (step * power >= value) return step * power;
  return 10 * power;
}

const clock = (ms) => new Date(ms).toLocaleTimeString([], { hour: '2-digit', minute: '2-digit', second: '2-digit' });

/**
 * Draws `points` ({ at: ISO time, perMinute }) into `container`, replacing what was there, and
 * when given the store's `forecast` ({ perMinute, label }) its pace as a dashed line across the
 * chart, labelled with the predicted time to empty.
 * The container keeps data-points and data-latest so tests (and curious people) can read the state.
 */
export function renderRateChart(container, points, { title, forecast = null }) {
  const svg = el('svg', { viewBox: `0 0 ${W} ${H}`, focusable: 'false', 'aria-hidden': 'true' });
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom;
  const times = points.map((p) => Date.parse(p.at));
  const t0 = times[0] ?? Date.now();
  const t1 = Math.max(times[times.length - 1] ?? t0, t0 + 1);
  const yMax = niceCeil(Math.max(0, forecast ? forecast.perMinute : 0, ...points.map((p) => p.perMinute)));
  const x = (t) => PAD.left + ((t - t0) / (t1 - t0)) * innerW;
  const y = (v) => PAD.top + innerH - (v / yMax) * innerH;

  for (const fraction of [0, 0.5, 1]) {
    const value = yMax * fraction;
    svg.append(el('line', { class: 'axis', x1: PAD.left, x2: W - PAD.right, y1: y(value), y2: y(value) }));
    svg.append(
      el(
        'text',
        { class: 'tick', x: PAD.left - 6, y: y(value) + 4, 'text-anchor': 'end' },
        String(Math.round(value * 10) / 10),
      ),
    );
  }
  svg.append(el('text', { class: 'tick', x: PAD.left, y: H - 8 }, clock(t0)));
  svg.append(el('text', { class: 'tick', x: W - PAD.right, y: H - 8, 'text-anchor': 'end' }, clock(t1)));

  if (points.length > 0) {
    const coords = points.map((p, i) => `${x(times[i]).toFixed(1)},${y(p.perMinute).toFixed(1)}`);
    const base = y(0).toFixed(1);
    svg.append(
      el('polygon', {
        class: 'area',
        points: `${x(times[0]).toFixed(1)},${base} ${coords.join(' ')} ${x(times[times.length - 1]).toFixed(1)},${base}`,
      }),
    );
    svg.append(el('polyline', { class: 'line', points: coords.join(' ') }));
    const last = coords[coords.length - 1].split(',');
    svg.append(el('circle', { class: 'dot', cx: last[0], cy: last[1], r: 3.5 }));
  }

  if (forecast) {
    svg.append(
      el('line', {
        class: 'forecast',
        x1: PAD.left,
        x2: W - PAD.right,
        y1: y(forecast.perMinute),
        y2: y(forecast.perMinute),
      }),
    );
    svg.append(
      el(
        'text',
        {
          class: 'forecast-label',
          x: W - PAD.right - 4,
          y: Math.max(PAD.top + 10, y(forecast.perMinute) - 6),
          'text-anchor': 'end',
        },
        forecast.label,
      ),
    );
  }

  const latest = points.length ? points[points.length - 1].perMinute : 0;
  const peak = Math.max(0, ...points.map((p) => p.perMinute));
  container.replaceChildren(svg);
  container.dataset.points = String(points.length);
  container.dataset.latest = String(latest);
  container.dataset.peak = String(peak);
  container.dataset.handedOut = String(points.length ? points[points.length - 1].handedOut : 0);
  if (forecast) container.dataset.forecast = String(forecast.perMinute);
  else delete container.dataset.forecast;
  container.setAttribute(
    'aria-label',
    (points.length
      ? `${title}: now ${latest} per minute, peak ${peak} per minute, ${points.length} samples from ${clock(t0)} to ${clock(t1)}`
      : `${title}: no samples yet`) + (forecast ? `; forecast ${forecast.label}` : ''),
  );
}

/**
 * Draws several series over time ({ at, [key]: value } points) as lines told apart by colour AND
 * dash pattern (not colour alone), with a legend. `lines`: [{ key, label, cls }]. The container
 * keeps data-points and data-latest-<key> for tests and curious people.
 */
export function renderSeriesChart(container, points, { title, lines }) {
  const svg = el('svg', { viewBox: `0 0 ${W} ${H}`, focusable: 'false', 'aria-hidden': 'true' });
  const innerW = W - PAD.left - PAD.right;
  const innerH = H - PAD.top - PAD.bottom - 16;
  const times = points.map((p) => Date.parse(p.at));
  const t0 = times[0] ?? Date.now();
  const t1 = Math.max(times[times.length - 1] ?? t0, t0 + 1);
  const yMax = niceCeil(Math.max(0, ...points.flatMap((p) => lines.map((l) => p[l.key] ?? 0))));
  const top = PAD.top + 16;
  const x = (t) => PAD.left + ((t - t0) / (t1 - t0)) * innerW;
  const y = (v) => top + innerH - (v / yMax) * innerH;

  for (const fraction of [0, 0.5, 1]) {
    const value = yMax * fraction;
    svg.append(el('line', { class: 'axis', x1: PAD.left, x2: W - PAD.right, y1: y(value), y2: y(value) }));
    svg.append(
      el(
        'text',
        { class: 'tick', x: PAD.left - 6, y: y(value) + 4, 'text-anchor': 'end' },
        String(Math.round(value * 10) / 10),
      ),
    );
  }
  svg.append(el('text', { class: 'tick', x: PAD.left, y: H - 8 }, clock(t0)));
  svg.append(el('text', { class: 'tick', x: W - PAD.right, y: H - 8, 'text-anchor': 'end' }, clock(t1)));

  lines.forEach((line, i) => {
    const lx = PAD.left + i * 150;
    svg.append(el('line', { class: `series ${line.cls}`, x1: lx, x2: lx + 28, y1: PAD.top + 2, y2: PAD.top + 2 }));
    svg.append(el('text', { class: 'tick', x: lx + 34, y: PAD.top + 6 }, line.label));
    const present = points.filter((p) => p[line.key] !== null && p[line.key] !== undefined);
    if (present.length === 0) return;
    const coords = present.map((p) => `${x(Date.parse(p.at)).toFixed(1)},${y(p[line.key]).toFixed(1)}`);
    svg.append(el('polyline', { class: `series ${line.cls}`, points: coords.join(' '), 'data-series': line.key }));
  });

  container.replaceChildren(svg);
  container.dataset.points = String(points.length);
  const last = points[points.length - 1];
  for (const line of lines)
    container.dataset[`latest${line.key[0].toUpperCase()}${line.key.slice(1)}`] = String(last?.[line.key] ?? '');
  container.setAttribute(
    'aria-label',
    last
      ? `${title}: ${lines.map((l) => `${l.label} ${last[l.key] ?? 'unlimited'}`).join(', ')}; ${points.length} samples from ${clock(t0)} to ${clock(t1)}`
      : `${title}: no samples yet`,
  );
}
