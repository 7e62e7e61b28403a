import type { ServiceStore } from './service-store.js';
import type { Health } from './types.js';
import type { PoolBackend } from './pools/backend.js';
import type { SaleBackend } from './sales/backend.js';
import type { OutboxBackend } from './outbox.js';
import type { CounterBackend, LockBackend } from './locks/backend.js';
import type { LimitBackend } from './limits/backend.js';
import type { WaitingRoomBackend } from './sales/waiting-room.js';
import type { ForecastBackend } from './forecast.js';
import type { GrantLedger } from './sales/grants.js';

/**
 * The contract every store implements (SQLite, PostgreSQL, Redis, Firestore, tiered): one member per
 * feature, each with its own contract beside its facade (pools/backend.ts, locks/backend.ts, …). It
 * never exposes connections or transactions: each adapter owns its connections.
 */
export interface Backend {
  /** `sqlite`, `postgres`, `redis`, … */
  readonly kind: string;
  readonly pools: PoolBackend;
  /** Flash sales. */
  readonly sales: SaleBackend;
  /** Outbox delivery (leases, retries). */
  readonly outbox: OutboxBackend;
  /** Leases, semaphores. */
  readonly locks: LockBackend;
  /** Sharded exact counters. */
  readonly counters: CounterBackend;
  /** Rate limits and quotas shared across instances. */
  readonly limits: LimitBackend;
  /** Fair waiting rooms for flash sales; absent where not built yet. */
  readonly waitingRooms?: WaitingRoomBackend;
  /** Burn rate, time to empty and predicted-empty alerts; absent where not built yet. */
  readonly forecasts?: ForecastBackend;
  /** Tiered mode: the sale capacity this (durable) store grants to a Redis fast path; absent on Redis. */
  readonly grants?: GrantLedger;
  /** API keys and idempotency records of the HTTP service. */
  readonly service: ServiceStore;
  /**
   * The longest one operation may keep running against the store before it answers (its
   * client-side timeouts in sequence). The HTTP service keeps a request's in-flight idempotency
   * record longer than this, so a retry cannot run beside its original. Absent: within a minute.
   */
  readonly operationTimeoutMs?: number;
  health(): Promise<Health>;
  /** Closes connections; pending operations finish first. Idempotent. */
  close(): Promise<void>;
}

/** How a backend module is opened from a store URL. */
export type BackendFactory = (url: URL, options: BackendOptions) => Promise<Backend>;

export interface BackendOptions {
  /** Extra, backend-specific settings (e.g. `{ poolSize: 16, schema: 'dibs' }`). */
  [key: string]: unknown;
}
