/**
 * The OpenAPI tags, each with the description the API reference shows above its operations.
 * `RouteDoc.tag` is typed by this map, so a route cannot bring a tag without a description.
 */
export const TAGS = {
  Operations: 'Health, readiness, metrics and this document: what probes, scrapers and clients generators read.',
  Keys: 'API keys of the calling tenant: who is calling, and (admin) making and revoking keys.',
  Pools:
    'Coupon pools: unique codes handed out exactly once — import, claim, validate, hold, redeem, release, revoke, export, audit.',
  Events:
    'The transactional outbox: events recorded in the same atomic step as the change, and their delivery attempts.',
  Sales: 'Flash sales: a time window and a unit cap, purchases and cart holds (reservations) that never oversell.',
  Carts: 'Units of several sales held in one step — every line or none — then confirmed, cancelled or expired as one.',
  Wishlist: 'Customers waiting for a SKU, notified once when its sale goes live.',
  Locks: 'Leases and semaphores with owner tokens and fencing tokens that only grow.',
  Counters: 'Sharded counters: exact values, shards added under contention.',
  Limits:
    "Rate limits and quotas shared by every instance (token bucket, sliding window, per period), decided by the store's clock.",
  'Waiting rooms': "A fair line in front of a sale: tickets admitted in the store's arrival order at a set rate.",
  Forecasts: 'Burn rate and time to empty of pools and sales, and a predicted-empty alert.',
  Dashboard: 'Read-only data the admin dashboard draws (claim rate sampled by this instance).',
} as const;

export type Tag = keyof typeof TAGS;
