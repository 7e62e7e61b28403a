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
