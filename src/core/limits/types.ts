/** Domain types of rate limits and quotas shared by every instance through the store (issue 27). */

/**
 * - `token-bucket`: GCRA — `limit` per `periodMs` refilled continuously, bursts up to `burst`.
 *   Over any interval of length w it admits at most `burst + w × limit / periodMs`.
 * - `sliding-window`: at most `limit` in EVERY window of `periodMs` (counted in `segments`
 *   buckets; the oldest bucket counts whole, so it never over-admits and under saturation admits
 *   at least `limit × segments / (segments + 1)` per period).
 * - `quota`: at most `limit` per calendar period (`periodMs`-long windows aligned to the Unix
 *   epoch: a day is a UTC day), e.g. 10 000 per day.
 */
export type LimitAlgorithm = 'token-bucket' | 'sliding-window' | 'quota';

export interface LimitDefinition {
  name: string;
  algorithm: LimitAlgorithm;
  /** Admissions per `periodMs`. */
  limit: number;
  periodMs: number;
  /** token-bucket: most admitted at once (default `limit`); others: equal to `limit`. */
  burst: number;
  /** sliding-window: buckets per period (default 10); token-bucket and quota: 1. */
  segments: number;
  createdAt: string;
  updatedAt: string;
}

/** What `create`/`update` accept. */
export interface LimitInput {
  name: string;
  algorithm: LimitAlgorithm;
  limit: number;
  periodMs: number;
  burst?: number;
  segments?: number;
}

export type LimitUpdate = Partial<Omit<LimitInput, 'name'>>;

export interface LimitAllowed {
  allowed: true;
  /** Units that could still be taken right now (after this take). */
  remaining: number;
  /** The store's clock when it decided (Unix ms). */
  at: number;
}

export interface LimitDenied {
  allowed: false;
  /** Exact wait (ms) until `n` would be admitted if nobody else takes meanwhile. */
  retryAfterMs: number;
  remaining: number;
  at: number;
}

export type LimitDecision = LimitAllowed | LimitDenied;

/** A definition as the store decides by it: one of two store-side algorithms. */
export type LimitPlan =
  /** GCRA: admit n when max(tat, now) + n·intervalMs − now ≤ toleranceMs (= burst · intervalMs). */
  | { kind: 'gcra'; name: string; shape: string; intervalMs: number; toleranceMs: number; idleMs: number }
  /**
   * Bucketed window: bucket = floor(now / widthMs); admit n when the buckets bucket−span … bucket
   * hold ≤ limit − n. span = segments for a sliding window, 0 for a quota.
   */
  | { kind: 'window'; name: string; shape: string; widthMs: number; span: number; limit: number; idleMs: number };

/** The per-key state every store keeps (SQLite/Firestore as JSON; PostgreSQL columns; Redis hash). */
export interface LimitState {
  /** The plan shape the state was built under; another shape starts afresh. */
  shape: string;
  /** Latest store clock an admission was judged at: time never goes back for a key. */
  last: number;
  /** GCRA: theoretical arrival time (ms). */
  tat: number;
  /** Window: bucket index of counts[0]. */
  base: number;
  counts: number[];
}
