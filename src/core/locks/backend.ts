import type { Page } from '../types.js';
/**
 * The store side of leases, semaphores and counters. Optional members of `Backend`
 * (`locks?`, `counters?`) so stores without them keep compiling. Inputs arrive validated.
 * Every rule (slot count, ownership, expiry, fence increment) is enforced inside ONE atomic
 * step using the STORE's clock (SQLite: julianday('now') in the transaction; PostgreSQL: now();
 * Redis: TIME) — never the caller's.
 */
import type { CounterValue, LeaseGrant, LockInfo } from './types.js';

export interface LockBackend {
  /**
   * Drops expired holders of `key`, then grants a slot if fewer than `limit` remain, with a new
   * fence = max(last fence + 1, the store's clock in µs), the last fence kept forever — so fences
   * grow even after the store lost the key's history. `validForMs` is measured after the grant
   * (after the commit where there is one). Returns null when all slots are taken.
   */
  tryAcquire(key: string, limit: number, ttlMs: number): Promise<LeaseGrant | null>;
  /**
   * Fair grant (opt-in FIFO across instances). The line of `key` is the live holders of
   * `queueKey` (tickets taken with `tryAcquire(queueKey, …)`: a ticket's number is its fence, the
   * store's own sequence). In ONE atomic step: drops lapsed holders and tickets, then grants a slot
   * only if live holders + live tickets ahead of `ticket` (smaller number) < `limit`, and removes
   * `ticket` from the line. `ticket` null (tryAcquire, first attempt): every live ticket is ahead.
   * Returns null when not granted — also when `ticket` is no longer live (it lapsed).
   */
  tryAcquireFair(
    key: string,
    limit: number,
    ttlMs: number,
    queueKey: string,
    ticket: string | null,
  ): Promise<LeaseGrant | null>;
  /** Extends a live lease to now + ttlMs. Throws `lease_lost` if it expired or is not held by `token`. */
  renew(key: string, token: string, ttlMs: number): Promise<LeaseGrant>;
  /** Frees the slot. Throws `not_owner` if `token` holds no live slot of `key` (expired or foreign). */
  release(key: string, token: string): Promise<void>;
  /** Live holders and the last fence (waiters are filled in by the facade). */
  inspect(key: string): Promise<Omit<LockInfo, 'waiters'>>;
  /**
   * Keys that were ever granted (they keep their last fence), in key order after `after`; never
   * the facade's own bookkeeping keys (waiter registrations, fair lines: they hold a control
   * character no user key may). Optional: stores without it answer `unsupported`.
   */
  listKeys?(options: { limit: number; after?: string }): Promise<Page<string>>;
  /**
   * Subscribes to releases of `key` that this store can observe (same process for SQLite,
   * pub/sub or LISTEN for servers). Returns an unsubscribe function. Waiters also poll as a
   * safety net, so a store may deliver nothing cross-process.
   */
  onRelease(key: string, listener: () => void): () => void;
}

export interface CounterBackend {
  /** Adds `by` (may be negative) to one shard; grows the shard count when writes contend. */
  incr(name: string, by: number): Promise<CounterValue>;
  /** Exact sum of all shards, read in one consistent step. 0 for an unknown counter. */
  get(name: string): Promise<CounterValue>;
  /** Deletes every shard. */
  reset(name: string): Promise<void>;
  /** Counter names in name order after `after`. Optional: stores without it answer `unsupported`. */
  listNames?(options: { limit: number; after?: string }): Promise<Page<string>>;
}
