/**
 * What the HTTP service keeps besides the domain data: API keys and idempotency records. Every
 * backend implements it in its own store, so several service instances on one store share keys
 * and idempotency (a retry may land on any instance). Times are the store's clock.
 */

export interface ApiKeyRecord {
  /** Public id, the middle part of the key (`dibs_<id>_<secret>`); safe to show and log. */
  id: string;
  tenant: string;
  name: string;
  scopes: string[];
  /** sha256 (hex) of the whole key; the key itself is never stored. */
  hash: string;
  createdAt: string;
  revokedAt: string | null;
}

/** A finished request's answer, stored under its idempotency key and replayed to retries. */
export interface StoredResponse {
  statusCode: number;
  /** Only the headers a replay must repeat (content-type, location, …). */
  headers: Record<string, string>;
  body: string;
}

export type IdempotencyBegin =
  /** This caller owns the key: run the request, then `complete` (or `abandon` on failure). */
  | { state: 'started' }
  /** Another request with this key is still running. */
  | { state: 'in_flight'; fingerprint: string }
  /** The key has a stored answer. */
  | { state: 'done'; fingerprint: string; response: StoredResponse };

export interface ServiceStore {
  insertKey(key: ApiKeyRecord): Promise<void>;
  getKey(id: string): Promise<ApiKeyRecord | null>;
  /** Every key (of one tenant when given), oldest first. */
  listKeys(tenant?: string): Promise<ApiKeyRecord[]>;
  /** Marks the key revoked (idempotent); null when no such key. */
  revokeKey(id: string): Promise<ApiKeyRecord | null>;

  /**
   * Insert-if-absent of an in-flight record for `scope`+`key` (atomically, in one statement or
   * script). An expired record (older than its TTL) counts as absent. `inFlightTtlMs` bounds how
   * long a crashed request blocks its key.
   */
  beginIdempotent(scope: string, key: string, fingerprint: string, inFlightTtlMs: number): Promise<IdempotencyBegin>;
  /** Stores the answer of a started request for `ttlMs`. */
  completeIdempotent(scope: string, key: string, response: StoredResponse, ttlMs: number): Promise<void>;
  /** Forgets a started request (it failed without an answer worth replaying), so a retry runs. */
  abandonIdempotent(scope: string, key: string): Promise<void>;
  /** Deletes expired idempotency records (and expired rate-limit windows); returns how many. */
  purgeExpired(): Promise<number>;
  /**
   * Counts one request against `key`'s fixed window of `windowMs` (started by the window's first
   * request), in one atomic step; answers the count so far and the time left. Present on stores
   * that share rate-limit counters between instances through the store itself (PostgreSQL, Redis).
   */
  hitRateLimit?(key: string, windowMs: number): Promise<{ current: number; ttlMs: number }>;
}
