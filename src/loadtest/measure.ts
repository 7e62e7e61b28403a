/**
 * Numbers of a run: latency percentiles, the per-time-bucket timeline behind the chart, and
 * the running tally behind the live progress line.
 */
import type { LatencySummary, Progress, TimedOutcome, TimelineBucket } from './types.js';

/** Nearest-rank percentile of an ascending array. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return 0;
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

const round2 = (n: number) => Math.round(n * 100) / 100;

export function summariseLatency(latencies: readonly number[]): LatencySummary {
  const sorted = Float64Array.from(latencies).sort();
  const arr = Array.from(sorted);
  const mean = arr.length === 0 ? 0 : arr.reduce((a, b) => a + b, 0) / arr.length;
  return {
    p50: round2(percentile(arr, 50)),
    p90: round2(percentile(arr, 90)),
    p99: round2(percentile(arr, 99)),
    max: round2(arr.at(-1) ?? 0),
    mean: round2(mean),
  };
}

const NICE_BUCKETS_SEC = [0.01, 0.02, 0.05, 0.1, 0.2, 0.25, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300];

/** A bucket width giving roughly `target` buckets over `spanSec`. */
export function bucketWidth(spanSec: number, target = 40): number {
  const ideal = spanSec / target;
  return NICE_BUCKETS_SEC.find((w) => w >= ideal) ?? NICE_BUCKETS_SEC.at(-1)!;
}

/** Outcomes grouped by send time: latency p50/p99 and answer counts per bucket. */
export function timeline(outcomes: readonly TimedOutcome[]): { bucketSec: number; buckets: TimelineBucket[] } {
  const span = outcomes.reduce((m, o) => Math.max(m, o.sent), 0) / 1000;
  const bucketSec = bucketWidth(span);
  const groups: TimedOutcome[][] = [];
  for (const o of outcomes) {
    const i = Math.floor(o.sent / 1000 / bucketSec);
    (groups[i] ??= []).push(o);
  }
  const buckets: TimelineBucket[] = [];
  for (let i = 0; i < groups.length; i++) {
    const group = groups[i] ?? [];
    const sorted = group.map((o) => o.ms).sort((a, b) => a - b);
    buckets.push({
      t: round2(i * bucketSec),
      answered: group.length,
      p50: round2(percentile(sorted, 50)),
      p99: round2(percentile(sorted, 99)),
      claimed: group.filter((o) => o.status === 'claimed').length,
      alreadyHeld: group.filter((o) => o.status === 'already-held').length,
      soldOut: group.filter((o) => o.status === 'error' && o.error === 'sold_out').length,
      errors: group.filter((o) => o.status === 'error' && o.error !== 'sold_out').length,
    });
  }
  return { bucketSec, buckets };
}

/**
 * Running totals for the live display. Latencies go into log-spaced buckets (≈2% wide) so the
 * p99 of every answer so far costs O(buckets), not a sort, at every tick.
 */
export class LiveTally {
  private readonly histogram = new Map<number, number>();
  private readonly samples: { at: number; answered: number }[] = [];
  private started = performance.now();
  answered = 0;
  claimed = 0;
  alreadyHeld = 0;
  soldOut = 0;
  errors = 0;

  constructor(private readonly planned: number) {}

  /** Elapsed time and rates count from the start signal, not from spawning the workers. */
  markStart(): void {
    this.started = performance.now();
    this.samples.length = 0;
  }

  add(batch: readonly TimedOutcome[]): void {
    for (const o of batch) {
      this.answered++;
      if (o.status === 'claimed') this.claimed++;
      else if (o.status === 'already-held') this.alreadyHeld++;
      else if (o.error === 'sold_out') this.soldOut++;
      else this.errors++;
      const bucket = Math.floor(Math.log(Math.max(o.ms, 0.001) * 1000) / Math.log(1.02));
      this.histogram.set(bucket, (this.histogram.get(bucket) ?? 0) + 1);
    }
  }

  private p99(): number {
    if (this.answered === 0) return 0;
    const keys = [...this.histogram.keys()].sort((a, b) => a - b);
    let seen = 0;
    const target = Math.ceil(this.answered * 0.99);
    for (const k of keys) {
      seen += this.histogram.get(k)!;
      if (seen >= target) return round2(1.02 ** (k + 1) / 1000);
    }
    return 0;
  }

  snapshot(): Progress {
    const now = performance.now();
    this.samples.push({ at: now, answered: this.answered });
    // Rate over the last ~second of samples.
    while (this.samples.length > 2 && now - this.samples[1]!.at >= 1000) this.samples.shift();
    const first = this.samples[0]!;
    const dt = (now - first.at) / 1000;
    const elapsed = (now - this.started) / 1000;
    return {
      elapsedSec: round2(elapsed),
      planned: this.planned,
      answered: this.answered,
      // A single sample (the first tick) has no window yet: use the average so far.
      perSecond: Math.round(dt > 0 ? (this.answered - first.answered) / dt : elapsed > 0 ? this.answered / elapsed : 0),
      claimed: this.claimed,
      alreadyHeld: this.alreadyHeld,
      soldOut: this.soldOut,
      errors: this.errors,
      p99Ms: this.p99(),
    };
  }
}
