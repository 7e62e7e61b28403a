/** Pool errors and audit checks that every backend phrases the same way. */
import { DibsError } from '../../core/errors.js';
import type { PoolStats, Violation } from '../../core/types.js';

export function limitBelowHoldings(limit: number, held: number): DibsError {
  return new DibsError('conflict', `perClaimantLimit cannot go below ${held}: a claimant already holds ${held} codes`, { field: 'perClaimantLimit', details: { maxHeld: held, requested: limit } });
}

export function keyReused(key: string, previous: { claimant: string; count: number }): DibsError {
  return new DibsError('conflict', `idempotency key '${key}' was already used for a different request (claimant '${previous.claimant}', count ${previous.count})`, { field: 'idempotencyKey' });
}

/** I4: every counter equals the count of codes in that state. */
export function counterViolations(pool: string, counters: PoolStats, ledger: PoolStats): Violation[] {
  return (Object.keys(ledger) as (keyof PoolStats)[])
    .filter((k) => counters[k] !== ledger[k])
    .map((k) => ({ invariant: 'I4' as const, pool, expected: ledger[k], actual: counters[k], message: `counter '${k}' says ${counters[k]} but the codes say ${ledger[k]}` }));
}

export function alreadyRedeemed(code: string, at: string): DibsError {
  return new DibsError('already_redeemed', `code '${code}' was already redeemed at ${at}`, { field: 'code' });
}

/** Unredeem needs a redeemed code, and — when an order is named — the redemption of that order. */
export function assertRedeemedFor(c: { code: string; status: string; redeemed_order?: string | null }, orderId: string | null): void {
  if (c.status !== 'redeemed') throw new DibsError('conflict', `code '${c.code}' is ${c.status}, not redeemed`, { field: 'code' });
  if (orderId !== null && c.redeemed_order !== orderId) throw new DibsError('conflict', `code '${c.code}' was not redeemed for order '${orderId}'`, { field: 'orderId' });
}

/** A redeem beyond the pool's redemption limits: `limit_reached`, naming the limit. */
export function assertRedemptionRoom(pool: string, limits: { maxRedemptions: number | null; maxRedemptionsPerClaimant: number | null }, redeemed: { pool: number; claimant: number }, claimant: string): void {
  if (limits.maxRedemptions !== null && redeemed.pool >= limits.maxRedemptions) throw redemptionLimitReached(pool, 'pool', limits.maxRedemptions, claimant);
  if (limits.maxRedemptionsPerClaimant !== null && redeemed.claimant >= limits.maxRedemptionsPerClaimant) throw redemptionLimitReached(pool, 'claimant', limits.maxRedemptionsPerClaimant, claimant);
}

export function redemptionLimitReached(pool: string, which: 'pool' | 'claimant', max: number, claimant: string): DibsError {
  return which === 'pool'
    ? new DibsError('limit_reached', `pool '${pool}' allows ${max} redemptions in all, and they are used`, { field: 'maxRedemptions', details: { maxRedemptions: max } })
    : new DibsError('limit_reached', `claimant '${claimant}' has redeemed ${max} code(s) of pool '${pool}', the most allowed`, { field: 'maxRedemptionsPerClaimant', details: { maxRedemptionsPerClaimant: max } });
}

/** Redeeming a never-claimed code of a public pool makes the redeemer its holder: name them. */
export function claimantRequired(code: string): DibsError {
  return new DibsError('invalid_input', `claimant: required to redeem code '${code}' directly (it was never claimed)`, { field: 'claimant' });
}

/** The redeemer of a public code already holds as many codes of the pool as one claimant may. */
export function holderAtLimit(pool: string, claimant: string, limit: number): DibsError {
  return new DibsError('limit_reached', `claimant '${claimant}' already holds ${limit} code(s) of pool '${pool}', the most allowed`, { field: 'perClaimantLimit', details: { perClaimantLimit: limit } });
}

/** Another checkout holds the code (`pools.hold`) until `until`. */
export function heldByOther(code: string, until: string): DibsError {
  return new DibsError('held', `code '${code}' is held by another checkout until ${until}`, { field: 'code', retriable: true, details: { until } });
}

/** Holds are for single-use codes: a multi-use code has no one holder. */
export function multiUseNotHoldable(code: string): DibsError {
  return new DibsError('conflict', `code '${code}' is a multi-use code: it cannot be held`, { field: 'code' });
}

/** A multi-use code counts its uses per order: redeem and unredeem name one. */
export function orderRequired(code: string): DibsError {
  return new DibsError('invalid_input', `orderId: required for multi-use code '${code}' (each use is recorded once per order)`, { field: 'orderId' });
}

export function usesExhausted(code: string, max: number): DibsError {
  return new DibsError('limit_reached', `code '${code}' has been used ${max} time(s), all it allows`, { field: 'uses', details: { uses: max } });
}

export function usesPerClaimantReached(code: string, claimant: string, max: number): DibsError {
  return new DibsError('limit_reached', `claimant '${claimant}' has used code '${code}' ${max} time(s), the most allowed`, { field: 'usesPerClaimant', details: { usesPerClaimant: max } });
}

/** A use of a multi-use code recorded for this order by another claimant. */
export function orderOfOtherClaimant(code: string, orderId: string): DibsError {
  return new DibsError('conflict', `order '${orderId}' already used code '${code}' for another claimant`, { field: 'orderId' });
}

export function codeExists(code: string): DibsError {
  return new DibsError('already_exists', `code '${code}' already exists in the pool`, { field: 'code' });
}

/** The `uses` answer of a multi-use code. */
export function usesOf(max: number, used: number, perClaimant: number | null, byClaimant?: number) {
  return { max, used, remaining: Math.max(0, max - used), perClaimant, ...(byClaimant === undefined ? {} : { byClaimant }) };
}
