/** Outbox event shapes, shared by every backend so consumers see one format. */

export const EVENT_TYPES = { poolLowStock: 'pool.low_stock' } as const;

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
