/**
 * The plan of a load test: who clicks when, from which process. Deterministic for a seed, so
 * a failing run can be replayed and reasoned about.
 *
 * Every claimant asks for `claimsPerClaimant` codes (distinct requests). A `repeatRatio` share
 * of claimants repeat their first request: those with an idempotency key retry it with the
 * SAME key (a client retry after a lost answer), those without double-click (a second request).
 * Repeats are sent from another process shortly after the original, so they truly race.
 */
import type { ArrivalPattern, PlannedClaim } from './types.js';

export interface PlanOptions {
  processes: number;
  claimants: number;
  claimsPerClaimant: number;
  repeatRatio: number;
  arrival: ArrivalPattern;
  durationSec: number;
  seed: number;
  /** Prefix of claimant ids, unique per run so runs against one pool never mix. */
  claimantPrefix: string;
}

/** A small seeded PRNG (LCG): plenty for shuffling a plan, and reproducible everywhere. */
export function random(seed: number): () => number {
  let state = seed >>> 0 || 1;
  return () => {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

/**
 * When the i-th of n arrivals happens, in ms after the start.
 * - burst: all at 0.
 * - uniform: a constant rate n/T, so arrival i is at i·T/n.
 * - ramp: the rate grows linearly from 0, so arrivals so far grow as t², and arrival i is at T·√(i/n).
 */
export function arrivalOffset(pattern: ArrivalPattern, i: number, n: number, durationSec: number): number {
  const windowMs = durationSec * 1000;
  if (pattern === 'burst' || n <= 1) return 0;
  if (pattern === 'uniform') return (i / n) * windowMs;
  return Math.sqrt(i / n) * windowMs;
}

/** 0..n-1 in random order (Fisher–Yates). */
function shuffled(n: number, rnd: () => number): number[] {
  const items = Array.from({ length: n }, (_, i) => i);
  for (let i = items.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/** A repeat follows its original after a short human/client delay: 20–250 ms. */
const REPEAT_DELAY_MS = [20, 250] as const;

/** Returns one lane of requests per process, each sorted by send time. */
export function planLoad(options: PlanOptions): PlannedClaim[][] {
  const { processes, claimants, claimsPerClaimant, claimantPrefix } = options;
  const rnd = random(options.seed);
  // Who arrives in which order: a shuffled permutation, so arrival order is not claimant order.
  const order = shuffled(claimants, rnd);
  const arrivalOf = new Array<number>(claimants);
  order.forEach(
    (claimant, rank) => (arrivalOf[claimant] = arrivalOffset(options.arrival, rank, claimants, options.durationSec)),
  );

  // Who repeats: a random subset, so repeaters are spread over the population and over
  // keyed and unkeyed claimants alike.
  const repeaters = new Set(shuffled(claimants, rnd).slice(0, Math.round(claimants * options.repeatRatio)));
  const lanes: PlannedClaim[][] = Array.from({ length: processes }, () => []);
  for (let i = 0; i < claimants; i++) {
    const claimant = `${claimantPrefix}${i}`;
    // Half the claimants send idempotency keys, like a client library that always does.
    const keyed = i % 2 === 0;
    const repeats = repeaters.has(i);
    const home = i % processes;
    const at = arrivalOf[i]!;
    for (let k = 0; k < claimsPerClaimant; k++) {
      const first: PlannedClaim = {
        claimant,
        attempt: k,
        at: options.arrival === 'burst' ? 0 : at + k * 10,
        ...(keyed ? { key: `${claimant}/order-${k}` } : {}),
      };
      lanes[(home + k) % processes]!.push(first);
      if (repeats && k === 0) {
        const delay = REPEAT_DELAY_MS[0] + rnd() * (REPEAT_DELAY_MS[1] - REPEAT_DELAY_MS[0]);
        const other = (home + 1) % processes;
        const again = options.arrival === 'burst' ? 0 : at + delay;
        lanes[other]!.push(keyed ? { ...first, at: again } : { claimant, attempt: claimsPerClaimant, at: again });
      }
    }
  }
  for (const lane of lanes) {
    // Shuffle, then stable-sort by time: same-time requests go out in random order.
    for (let i = lane.length - 1; i > 0; i--) {
      const j = Math.floor(rnd() * (i + 1));
      [lane[i], lane[j]] = [lane[j]!, lane[i]!];
    }
    lane.sort((a, b) => a.at - b.at);
  }
  return lanes;
}
