/** Pool audit checks and answers that every backend phrases the same way (refusals: core/refusals.ts). */
import type { CodeInfo, PoolStats, Violation } from '../../core/types.js';

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

/** A multi-use code as a store read it (instants as ISO UTC). */
export interface MultiUseFields {
  code: string;
  max: number;
  used: number;
  perClaimant: number | null;
  startsAt: string | null;
  expiresAt: string | null;
}

/** A multi-use code as answered: free while uses remain, redeemed when none do. */
export function multiUseCode(pool: string, m: MultiUseFields, byClaimant?: number): CodeInfo {
  return {
    pool,
    code: m.code,
    status: m.used < m.max ? 'free' : 'redeemed',
    claimant: null,
    claimedAt: null,
    redeemedAt: null,
    orderId: null,
    startsAt: m.startsAt,
    expiresAt: m.expiresAt,
    uses: {
      max: m.max,
      used: m.used,
      remaining: Math.max(0, m.max - m.used),
      perClaimant: m.perClaimant,
      ...(byClaimant === undefined ? {} : { byClaimant }),
    },
  };
}

/** One use of a multi-use code: the answer of its redeem. */
export function useOf(code: CodeInfo, use: { claimant: string | null; at: string; orderId: string }): CodeInfo {
  return { ...code, status: 'redeemed', claimant: use.claimant, redeemedAt: use.at, orderId: use.orderId };
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
