/**
 * Claim rate over time, sampled in memory by the service (no store offers a claims-per-minute
 * series, and scanning claim timestamps on every refresh would read every code).
 *
 * Every `everyMs` the sampler reads the O(1) counters of each pool someone has asked about in the
 * last `watchMs` and keeps the last `keep` samples of `handedOut = claimed + redeemed`. The rate
 * between two samples is the growth of that number per minute: it counts claims from every
 * process (other service instances, the CLI, the library), not just this service's. Releases make
 * `handedOut` shrink, so the rate is a NET rate, floored at 0. Samples live in this process only:
 * a restart (or another instance) starts a fresh series, and a pool's series starts when someone
 * first asks for it.
 */
import type { Dibs } from '../core/dibs.js';
import { isDibsError } from '../core/errors.js';
import type { PoolStats } from '../core/types.js';

export interface RatePoint {
  /** ISO time of the sample. */
  at: string;
  /** claimed + redeemed at that time. */
  handedOut: number;
  /** Net codes handed out per minute since the previous point (0 for the first). */
  perMinute: number;
}

export interface ClaimRateSeries {
  pool: string;
  everyMs: number;
  /** Oldest first; the last point is read at request time. */
  points: RatePoint[];
}

export interface ClaimRateOptions {
  everyMs?: number;
  keep?: number;
  watchMs?: number;
}

interface Sample {
  t: number;
  handedOut: number;
}

const handedOut = (stats: PoolStats) => stats.claimed + stats.redeemed;

export class ClaimRateSampler {
  readonly everyMs: number;
  private readonly keep: number;
  private readonly watchMs: number;
  private readonly watched = new Map<string, { askedAt: number; samples: Sample[] }>();
  private timer: NodeJS.Timeout | null = null;
  private ticking: Promise<void> | null = null;

  constructor(
    private readonly dibs: Dibs,
    options: ClaimRateOptions = {},
  ) {
    this.everyMs = options.everyMs ?? 5000;
    this.keep = options.keep ?? 120;
    this.watchMs = options.watchMs ?? 10 * 60_000;
  }

  /** The pool's series, ending with a point read now. Starts watching the pool. */
  async series(pool: string): Promise<ClaimRateSeries> {
    const now = Date.now();
    const current = handedOut(await this.dibs.pools.stats(pool)); // not_found surfaces here
    let entry = this.watched.get(pool);
    if (!entry) this.watched.set(pool, (entry = { askedAt: now, samples: [] }));
    entry.askedAt = now;
    this.start();
    const last = entry.samples[entry.samples.length - 1];
    // The first ask records a sample so the next tick already yields a rate.
    if (!last) entry.samples.push({ t: now, handedOut: current });
    const points = toPoints(entry.samples);
    if (last && now > last.t) {
      // The live point's rate is measured over at least one sampling interval when history allows,
      // so a refresh just after a tick does not extrapolate one claim into a spike.
      const base = [...entry.samples].reverse().find((s) => s.t <= now - this.everyMs) ?? entry.samples[0]!;
      points.push({
        at: new Date(now).toISOString(),
        handedOut: current,
        perMinute: ratePerMinute(base, { t: now, handedOut: current }),
      });
    }
    return { pool, everyMs: this.everyMs, points };
  }

  /** Stops sampling (the service's onClose). */
  async stop(): Promise<void> {
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    await this.ticking;
  }

  private start(): void {
    if (this.timer) return;
    this.timer = setInterval(() => {
      this.ticking ??= this.tick().finally(() => (this.ticking = null));
    }, this.everyMs);
    this.timer.unref(); // never keeps a process alive on its own
  }

  private async tick(): Promise<void> {
    const now = Date.now();
    for (const [pool, entry] of this.watched) {
      if (now - entry.askedAt > this.watchMs) {
        this.watched.delete(pool);
        continue;
      }
      try {
        entry.samples.push({ t: Date.now(), handedOut: handedOut(await this.dibs.pools.stats(pool)) });
        if (entry.samples.length > this.keep) entry.samples.splice(0, entry.samples.length - this.keep);
      } catch (error) {
        // A deleted pool stops being watched; a store hiccup only costs this sample.
        if (isDibsError(error, 'not_found')) this.watched.delete(pool);
      }
    }
    if (this.watched.size === 0 && this.timer) {
      clearInterval(this.timer);
      this.timer = null;
    }
  }
}

function toPoints(samples: Sample[]): RatePoint[] {
  return samples.map((sample, i) => {
    const previous = samples[i - 1];
    return {
      at: new Date(sample.t).toISOString(),
      handedOut: sample.handedOut,
      perMinute: previous ? ratePerMinute(previous, sample) : 0,
    };
  });
}

function ratePerMinute(from: Sample, to: Sample): number {
  if (to.t <= from.t) return 0;
  return Math.round(Math.max(0, ((to.handedOut - from.handedOut) * 60_000) / (to.t - from.t)) * 10) / 10;
}
