/** Domain types of leases (locks), semaphores and sharded counters (issue 7). */

/** One grant of a lock or semaphore slot. Only the holder of `token` may renew or release it. */
export interface Lease {
  key: string;
  /** Secret of the holder; renew/release must present it. */
  token: string;
  /** Strictly increasing per key forever (survives release and expiry): pass it to a FenceGuard. */
  fence: number;
  /** Server time (ISO) at which the lease lapses unless renewed. */
  expiresAt: string;
  /** Milliseconds of validity left, measured by the store AFTER the grant (never ≤ 0 on success). */
  validForMs: number;
  /** Concurrent holders allowed for this key (1 for a lock). */
  limit: number;
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
  /** Waiters known to THIS process (stores do not track remote waiters). */
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
