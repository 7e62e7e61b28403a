/** Outbox event shapes, shared by every backend so consumers see one format. */

export const EVENT_TYPES = { poolLowStock: 'pool.low_stock', codeUnredeemed: 'code.unredeemed' } as const;

/**
 * `crossing` numbers the times the pool's free count has dropped to/below the threshold (1, 2, …
 * after refills); it makes the idempotency key unique per crossing, so a redelivery is a duplicate
 * but the next crossing after a refill is a new event.
 */
export function lowStockEvent(pool: string, crossing: number, free: number, threshold: number) {
  return {
    type: EVENT_TYPES.poolLowStock,
    idempotencyKey: `pool.low_stock:${pool}:${crossing}`,
    payload: { pool, free, threshold, crossing },
  };
}

/**
 * The audit record of a refund: a redeemed code handed back to its holder. `nonce` (random, made
 * once per unredeem) keys it: two refunds of one code within the same millisecond stay two events,
 * and a redelivery of one is still a duplicate.
 */
export function unredeemedEvent(
  pool: string,
  code: string,
  claimant: string,
  orderId: string | null,
  redeemedAt: string,
  at: string,
  nonce: string,
) {
  return {
    type: EVENT_TYPES.codeUnredeemed,
    idempotencyKey: `code.unredeemed:${pool}:${code}:${nonce}`,
    payload: { pool, code, claimant, orderId, redeemedAt, unredeemedAt: at },
  };
}
