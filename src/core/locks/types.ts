/** Domain types of leases (locks), semaphores and sharded counters. */

/** One grant of a lock or semaphore slot. Only the holder of `token` may renew or release it. */
export interface Lease {
  key: string;
  /** Secret of the holder; renew/release must present it. */
  token: string;
  /**
   * Strictly increasing per key forever — across release, expiry, and a store that lost data or
   * failed over (max(last + 1, the store's clock in µs): ~1.8e15, below 2^53). Pass the lease to a
   * FenceGuard. A renewal keeps it.
   */
  fence: number;
  /** Server time (ISO) at which the lease lapses unless renewed. */
  expiresAt: string;
  /**
   * Milliseconds this process may count on the lease from when `acquire`/`renew` resolved: the
   * store's validity after the grant, counted from when the request was SENT (reply latency and
   * event-loop delay already taken off) minus a small margin. Never ≤ 0 on success.
   */
  validForMs: number;
  /** Concurrent holders allowed for this key (1 for a lock). */
  limit: number;
  /** The TTL the lease was acquired with: what `renew` extends it by unless given another `ttlMs`. */
  ttlMs: number;
  /**
   * Fair acquires that had to queue: the waiter's ticket, its place in the store's line (a per-key
   * sequence of the store). Fair grants of a key go out in ticket order.
   */
  ticket?: number;
}

/** What the backend returns for a grant or a renewal; the facade adds key/limit. */
export interface LeaseGrant {
  token: string;
  fence: number;
  expiresAt: string;
  validForMs: number;
}

export interface LockHolder {
  /** First 8 characters only: inspecting never reveals a usable token. */
  tokenPrefix: string;
  fence: number;
  expiresAt: string;
}

export interface LockInfo {
  key: string;
  holders: LockHolder[];
  /**
   * Acquires waiting for a slot: those of every instance that have waited over 100 ms (they
   * register in the store), or this process's own waiters if more.
   */
  waiters: number;
  /** Highest fence ever granted for the key (0 if never). */
  lastFence: number;
}

export interface AcquireOptions {
  /** Lease time to live (default 30 000 ms). */
  ttlMs?: number;
  /** How long to wait for a free slot (default 0 = try once, then `lock_timeout`). */
  waitMs?: number;
  signal?: AbortSignal;
  /** Serve waiters of this process in arrival order (default true). */
  fifo?: boolean;
  /**
   * FIFO across every instance and process (default false): each waiter takes a ticket from the
   * store's per-key sequence and is granted only when no live ticket ahead of it still waits.
   * `tryAcquire` with `fair` never jumps a non-empty line.
   */
  fair?: boolean;
}

export interface RunExclusiveOptions extends AcquireOptions {
  /** Hard cap of the whole hold, renewals included; the fn's signal fires when reached. */
  maxHoldMs?: number;
}

export interface CounterValue {
  name: string;
  value: number;
  shards: number;
}
