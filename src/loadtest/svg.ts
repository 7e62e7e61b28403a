/**
 * The picture of a load test, as a self-contained SVG (no libraries, no fonts to load):
 * latency p50/p99 per time bucket on top, answers per bucket as stacked bars below
 * (claimed · already-held · sold_out · errors), on one shared time axis.
 */
import { describeWorkload } from './format.js';
import type { LoadtestReport, TimelineBucket } from './types.js';

const W = 960;
const H = 620;
const M = { left: 78, right: 24 };
const LAT = { top: 96, bottom: 336 };
const BARS = { top: 392, bottom: 552 };
const COLORS = {
  p50: '#2563eb',
  p99: '#ea580c',
  claimed: '#16a34a',
  alreadyHeld: '#0891b2',
  soldOut: '#a3a3a3',
  errors: '#dc2626',
  grid: '#e5e7eb',
  axis: '#374151',
  text: '#111827',
  muted: '#6b7280',
};

export function escapeXml(s: string): string {
  return s.replace(/[<>&"']/g, (c) => ({ '<': '&lt;', '>': '&gt;', '&': '&amp;', '"': '&quot;', "'": '&apos;' })[c]!);
}

/** Round tick steps (1, 2, 2.5, 5 × 10^k) covering 0..max in about `count` steps. */
export function niceTicks(max: number, count = 5): number[] {
  if (!(max > 0)) return [0, 1];
  const raw = max / count;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 2.5, 5, 10].map((m) => m * magnitude).find((s) => s >= raw)!;
  const ticks: number[] = [];
  for (let v = 0; v < max + step * 0.999; v += step) ticks.push(Number(v.toPrecision(12)));
  return ticks;
}

const fmt = (n: number) =>
  Number.isInteger(n) ? n.toLocaleString('en-US') : n >= 10 ? n.toFixed(0) : n.toFixed(n >= 1 ? 1 : 2);
/** Axis ticks are round already: print them as short as they are (0.5, 1, 2.5). */
const tick = (n: number) => (n >= 1000 ? n.toLocaleString('en-US') : String(Number(n.toPrecision(6))));
const num = (n: number) => Math.round(n).toLocaleString('en-US');
const px = (n: number) => n.toFixed(1);

function text(x: number, y: number, content: string, attrs = ''): string {
  return `<text x="${px(x)}" y="${px(y)}" ${attrs}>${escapeXml(content)}</text>`;
}

export function renderSvg(report: LoadtestReport): string {
  const { buckets, bucketSec } = report.timeline;
  const s = report.scenario;
  const spanSec = Math.max(bucketSec, buckets.length * bucketSec);
  const x = (t: number) => M.left + (t / spanSec) * (W - M.left - M.right);
  const out: string[] = [];
  out.push(
    `<svg xmlns="http://www.w3.org/2000/svg" width="${W}" height="${H}" viewBox="0 0 ${W} ${H}" font-family="system-ui, -apple-system, 'Segoe UI', Helvetica, Arial, sans-serif" font-size="12" fill="${COLORS.text}">`,
  );
  out.push(`<rect width="${W}" height="${H}" fill="#ffffff"/>`);

  // Title and the one-line verdict.
  const title = `dibs loadtest · ${report.target.backend} · ${describeWorkload(report)} · ${s.arrival}${s.arrival === 'burst' ? '' : ` over ${s.durationSec} s`} · ${s.processes} process${s.processes === 1 ? '' : 'es'}`;
  out.push(text(M.left, 30, title, 'font-size="17" font-weight="600"'));
  const verdict = report.ok
    ? '✓ exactly-once verified, audit clean'
    : `✗ ${report.violations.length} violation${report.violations.length === 1 ? '' : 's'}: ${report.violations[0]?.message ?? ''}`;
  out.push(
    text(
      M.left,
      54,
      verdict.length > 120 ? `${verdict.slice(0, 117)}…` : verdict,
      `font-weight="600" fill="${report.ok ? COLORS.claimed : COLORS.errors}"`,
    ),
  );
  const l = report.latencyMs;
  out.push(
    text(
      M.left,
      74,
      `${num(report.requests.answered)} answers in ${report.wallSeconds.toFixed(2)} s · ${num(report.throughput)} answers/s · latency p50 ${fmt(l.p50)} ms · p90 ${fmt(l.p90)} ms · p99 ${fmt(l.p99)} ms · max ${fmt(l.max)} ms`,
      `fill="${COLORS.muted}"`,
    ),
  );

  if (buckets.length === 0) {
    out.push(
      text(
        W / 2,
        (LAT.top + BARS.bottom) / 2,
        'no answers were recorded',
        `text-anchor="middle" fill="${COLORS.muted}" font-size="16"`,
      ),
    );
    out.push('</svg>');
    return out.join('\n');
  }

  const xTicks = niceTicks(spanSec, 8).filter((t) => t <= spanSec + 1e-9);
  const xAxis = (bottom: number) => {
    const parts = [`<line x1="${M.left}" y1="${bottom}" x2="${W - M.right}" y2="${bottom}" stroke="${COLORS.axis}"/>`];
    for (const t of xTicks) {
      parts.push(`<line x1="${px(x(t))}" y1="${bottom}" x2="${px(x(t))}" y2="${bottom + 5}" stroke="${COLORS.axis}"/>`);
      parts.push(text(x(t), bottom + 18, tick(t), 'text-anchor="middle"'));
    }
    return parts.join('');
  };
  const yAxis = (
    top: number,
    bottom: number,
    max: number,
    label: string,
    format: (n: number) => string,
    logFrom?: number,
  ) => {
    let ticks: number[];
    let y: (v: number) => number;
    if (logFrom !== undefined) {
      // Decades from just below the smallest value to just above the largest.
      const lo = Math.floor(Math.log10(logFrom));
      const hi = Math.max(lo + 1, Math.ceil(Math.log10(max)));
      ticks = Array.from({ length: hi - lo + 1 }, (_, i) => Number((10 ** (lo + i)).toPrecision(6)));
      y = (v: number) => bottom - ((Math.log10(Math.max(v, 10 ** lo)) - lo) / (hi - lo)) * (bottom - top);
    } else {
      ticks = niceTicks(max, 5);
      const top_ = ticks.at(-1)!;
      y = (v: number) => bottom - (v / top_) * (bottom - top);
    }
    const parts = [`<line x1="${M.left}" y1="${top}" x2="${M.left}" y2="${bottom}" stroke="${COLORS.axis}"/>`];
    for (const v of ticks) {
      parts.push(
        `<line x1="${M.left}" y1="${px(y(v))}" x2="${W - M.right}" y2="${px(y(v))}" stroke="${COLORS.grid}"/>`,
      );
      parts.push(text(M.left - 8, y(v) + 4, format(v), 'text-anchor="end"'));
    }
    parts.push(
      text(
        18,
        (top + bottom) / 2,
        label,
        `text-anchor="middle" transform="rotate(-90 18 ${px((top + bottom) / 2)})" fill="${COLORS.axis}"`,
      ),
    );
    return { svg: parts.join(''), y };
  };

  // Panel 1: latency per bucket (by send time).
  const latMax = Math.max(...buckets.map((b) => b.p99), 0.01);
  // When p99 is orders of magnitude above p50 (lock contention, retries), a linear axis flattens
  // p50 to zero: switch to a log axis so both lines stay readable.
  const latMin = Math.min(...buckets.filter((b) => b.answered > 0).map((b) => Math.max(b.p50, 0.001)));
  const logScale = latMax / latMin >= 50;
  const lat = yAxis(
    LAT.top + 14,
    LAT.bottom,
    latMax,
    logScale ? 'latency (ms, log scale)' : 'latency (ms)',
    tick,
    logScale ? latMin : undefined,
  );
  out.push(lat.svg);
  out.push(xAxis(LAT.bottom));
  const mid = (i: number) => x((i + 0.5) * bucketSec);
  const series = (key: 'p50' | 'p99', color: string) => {
    const points = buckets.map((b, i) => (b.answered > 0 ? `${px(mid(i))},${px(lat.y(b[key]))}` : null));
    // Empty buckets break the line instead of drawing a false zero.
    const runs: string[][] = [[]];
    for (const p of points) p === null ? runs.push([]) : runs.at(-1)!.push(p);
    const lines = runs
      .filter((r) => r.length > 1)
      .map(
        (r) =>
          `<polyline points="${r.join(' ')}" fill="none" stroke="${color}" stroke-width="2" stroke-linejoin="round"/>`,
      );
    const dots = points
      .filter((p): p is string => p !== null)
      .map((p) => `<circle cx="${p.split(',')[0]}" cy="${p.split(',')[1]}" r="2.6" fill="${color}"/>`);
    return lines.join('') + dots.join('');
  };
  out.push(series('p99', COLORS.p99), series('p50', COLORS.p50));
  out.push(
    legend(
      W - M.right - 190,
      LAT.top - 2,
      [
        ['p50', COLORS.p50],
        ['p99', COLORS.p99],
      ],
      'line',
    ),
  );

  // Panel 2: answers per bucket, stacked by outcome.
  const counts: [keyof Pick<TimelineBucket, 'claimed' | 'alreadyHeld' | 'soldOut' | 'errors'>, string, string][] = [
    ['claimed', 'claimed', COLORS.claimed],
    ['alreadyHeld', 'already-held', COLORS.alreadyHeld],
    ['soldOut', 'sold_out', COLORS.soldOut],
    ['errors', 'errors', COLORS.errors],
  ];
  const barMax = Math.max(...buckets.map((b) => b.answered), 1);
  const bars = yAxis(BARS.top + 14, BARS.bottom, barMax, `answers per ${tick(bucketSec)} s`, (n) =>
    n >= 10_000 ? `${tick(n / 1000)}k` : tick(n),
  );
  out.push(bars.svg);
  const barWidth = Math.max(1, (x(bucketSec) - x(0)) * 0.8);
  buckets.forEach((b, i) => {
    let base = 0;
    for (const [key, label, color] of counts) {
      const n = b[key];
      if (n === 0) continue;
      const y0 = bars.y(base);
      const y1 = bars.y(base + n);
      out.push(
        `<rect x="${px(mid(i) - barWidth / 2)}" y="${px(y1)}" width="${px(barWidth)}" height="${px(Math.max(0.5, y0 - y1))}" fill="${color}"><title>${escapeXml(`${fmt(b.t)}–${fmt(b.t + bucketSec)} s: ${num(n)} ${label}`)}</title></rect>`,
      );
      base += n;
    }
  });
  out.push(xAxis(BARS.bottom));
  out.push(
    text(
      (M.left + W - M.right) / 2,
      BARS.bottom + 38,
      'time since start (s), by send time',
      `text-anchor="middle" fill="${COLORS.axis}"`,
    ),
  );
  const totals = report.outcomes;
  const errorTotal = Object.values(totals.errors).reduce((a, b) => a + b, 0);
  const totalOf = {
    claimed: totals.claimed,
    alreadyHeld: totals.alreadyHeld,
    soldOut: totals.soldOut,
    errors: errorTotal,
  };
  out.push(
    legend(
      M.left + 10,
      BARS.top - 2,
      counts.map(([key, label, color]) => [`${label} ${num(totalOf[key])}`, color]),
      'box',
    ),
  );
  out.push(
    text(
      W - M.right,
      H - 10,
      `pool ${report.pool} · ${report.startedAt}`,
      `text-anchor="end" fill="${COLORS.muted}" font-size="10"`,
    ),
  );
  out.push('</svg>');
  return out.join('\n');
}

function legend(x0: number, y: number, items: [string, string][], kind: 'line' | 'box'): string {
  let x = x0;
  const parts: string[] = [];
  for (const [label, color] of items) {
    parts.push(
      kind === 'line'
        ? `<line x1="${px(x)}" y1="${px(y - 4)}" x2="${px(x + 18)}" y2="${px(y - 4)}" stroke="${color}" stroke-width="2.5"/>`
        : `<rect x="${px(x)}" y="${px(y - 10)}" width="12" height="12" fill="${color}"/>`,
    );
    parts.push(text(x + (kind === 'line' ? 24 : 17), y, label));
    x += (kind === 'line' ? 30 : 23) + label.length * 6.6 + 14;
  }
  return parts.join('');
}
