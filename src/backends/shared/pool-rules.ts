/** Pool audit checks and answers that every backend phrases the same way (refusals: core/refusals.ts). */
import type { PoolStats, Violation } from '../../core/types.js';

/** I4: every counter equals the count of codes in that state. */
export function counterViolations(pool: string, counters: PoolStats, ledger: PoolStats): Violation[] {
  return (Object.keys(ledger) as (keyof PoolStats)[])
    .filter((k) => counters[k] !== ledger[k])
    .map((k) => ({
      invariant: 'I4' as const,
      pool,
      expected: ledger[k],
      actual: counters[k],
      message: `counter '${k}' says ${counters[k]} but the codes say ${ledger[k]}`,
    }));
}

/** The `uses` answer of a multi-use code. */
export function usesOf(max: number, used: number, perClaimant: number | null, byClaimant?: number) {
  return {
    max,
    used,
    remaining: Math.max(0, max - used),
    perClaimant,
    ...(byClaimant === undefined ? {} : { byClaimant }),
  };
}
