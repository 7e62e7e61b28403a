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

/** I2: a claimant holding more codes than the pool's per-claimant limit. */
export function overLimitViolation(pool: string, claimant: string, held: number, limit: number): Violation {
  return {
    invariant: 'I2',
    pool,
    claimant,
    expected: limit,
    actual: held,
    message: `claimant '${claimant}' holds ${held} codes, limit is ${limit}`,
  };
}

/** I1 (stores that keep a list per holder): the list names a code whose own record names another holder, or none. */
export function misListedViolation(
  pool: string,
  claimant: string,
  code: string,
  holder: string | null | undefined,
): Violation {
  return {
    invariant: 'I1',
    pool,
    code,
    claimant,
    message: `'${claimant}' lists code '${code}' held by ${holder ?? 'nobody'}`,
  };
}

/** I1 (stores that keep a list per holder): a code names a holder whose list lacks it. */
export function unlistedViolation(pool: string, code: string, holder: string): Violation {
  return {
    invariant: 'I1',
    pool,
    code,
    claimant: holder,
    message: `code '${code}' names holder '${holder}' who does not list it`,
  };
}
