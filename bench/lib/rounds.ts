/**
 * Interleaved rounds: a baseline and dibs measured turn about (baseline, dibs, baseline, dibs, …)
 * so that whatever else the machine does hits both alike; each round gives one same-round ratio,
 * and a figure is its median with the spread (min–max) over the rounds.
 */
import { hostname, loadavg } from 'node:os';
import type { RunStats } from './measure.js';

/** One side of a comparison: a fresh run each time it is called. */
export interface Side {
  label: string;
  run: () => Promise<RunStats>;
}

/** Median and spread of one quantity over the rounds. */
export interface Spread {
  values: number[];
  median: number;
  min: number;
  max: number;
}

export function spread(values: number[]): Spread {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  const median = sorted.length === 0 ? NaN : sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
  return { values, median, min: sorted[0] ?? NaN, max: sorted[sorted.length - 1] ?? NaN };
}

/** Runs every side once per round, in the given order, `rounds` times; → each side's runs. */
export async function interleave(rounds: number, sides: Side[]): Promise<RunStats[][]> {
  const runs: RunStats[][] = sides.map(() => []);
  for (let r = 0; r < rounds; r++) {
    for (const [i, side] of sides.entries()) runs[i]!.push(await side.run());
  }
  return runs;
}

/** A headline figure: dibs against its baseline over interleaved rounds. */
export interface Ratio {
  path: string;
  target: string;
  /** What `baseline` and `dibs` count (claims/s, ms p50, …). */
  unit: string;
  /** Null for a figure with no baseline (an absolute target: a time, a p99). */
  baseline: Spread | null;
  dibs: Spread;
  /** dibs / baseline per round (null without a baseline). */
  ratio: Spread | null;
  rounds: number;
  load: string;
}

export const perSecond = (r: RunStats) => r.perSecond;
export const p50 = (r: RunStats) => r.p50;
export const p99 = (r: RunStats) => r.p99;

/** Same-round ratios of `metric` between the baseline's runs and dibs' runs. */
export function ratio(
  path: string,
  target: string,
  unit: string,
  baseline: RunStats[],
  dibs: RunStats[],
  metric: (r: RunStats) => number,
  load: string,
): Ratio {
  const b = baseline.map(metric);
  const d = dibs.map(metric);
  return {
    path,
    target,
    unit,
    baseline: spread(b),
    dibs: spread(d),
    ratio: spread(d.map((x, i) => x / b[i]!)),
    rounds: d.length,
    load,
  };
}

/** A figure with an absolute target (no baseline): the median and spread of `values`. */
export function figure(path: string, target: string, unit: string, values: number[], load: string): Ratio {
  return { path, target, unit, baseline: null, dibs: spread(values), ratio: null, rounds: values.length, load };
}

export function loadNow(): string {
  return loadavg()
    .map((l) => l.toFixed(1))
    .join(' ');
}

const num = (x: number) => (Math.abs(x) >= 100 ? Math.round(x).toLocaleString('en-US') : x.toFixed(2));
const fmt = (s: Spread) => `${num(s.median)} (${num(s.min)}–${num(s.max)})`;

export function printRatios(title: string, rows: Ratio[]): void {
  console.log(`\n${title}`);
  console.log(`host ${hostname()}, load average now ${loadNow()}`);
  console.log(
    '| path | target | unit | baseline median (min–max) | dibs median (min–max) | ratio median | ratio spread | rounds | load avg during |',
  );
  console.log('|---|---|---|---:|---:|---:|---:|---:|---|');
  for (const r of rows) {
    const ratioCells = r.ratio
      ? `**${r.ratio.median.toFixed(2)}×** | ${r.ratio.min.toFixed(2)}–${r.ratio.max.toFixed(2)}×`
      : '— | —';
    console.log(
      `| ${r.path} | ${r.target} | ${r.unit} | ${r.baseline ? fmt(r.baseline) : '—'} | ${fmt(r.dibs)} | ${ratioCells} | ${r.rounds} | ${r.load} |`,
    );
  }
}
