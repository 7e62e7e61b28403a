/** Domain types shared by every feature, backend and shell (library, HTTP, CLI); the pools' own live in pools/types.ts. */

export type * from './pools/types.js';

export interface Page<T> {
  items: T[];
  /** Pass as `after` to get the next page; null when this is the last page. */
  nextCursor: string | null;
}

export interface ListOptions {
  limit?: number;
  after?: string;
}

export type InvariantId = 'I1' | 'I2' | 'I3' | 'I4' | 'I5' | 'I6' | 'I7';

export interface Violation {
  invariant: InvariantId;
  pool: string;
  message: string;
  code?: string;
  claimant?: string;
  expected?: unknown;
  actual?: unknown;
}

export interface OutboxEvent {
  id: string;
  type: string;
  /** Unique per logical event: delivering twice under one key is a duplicate. */
  idempotencyKey: string;
  payload: Record<string, unknown>;
  createdAt: string;
}

export interface Health {
  ok: boolean;
  backend: string;
  details: Record<string, unknown>;
  /**
   * Stores with a versioned schema (SQLite, PostgreSQL, and a tiered store's ledger): the newest
   * migration the store has and the newest this build carries. Readiness requires applied >= expected.
   */
  migrations?: { applied: number | null; expected: number };
}
