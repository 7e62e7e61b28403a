/** The HTTP service's keys and idempotency records in PostgreSQL (one statement per step). */
import type pg from 'pg';
import type { ApiKeyRecord, IdempotencyBegin, ServiceStore, StoredResponse } from '../../core/service-store.js';
import { loadQueries } from '../shared/sql-files.js';
import { query } from './connection.js';

const Q = loadQueries(new URL('./service.sql', import.meta.url), [
  'insertKey',
  'getKey',
  'listKeys',
  'listTenantKeys',
  'revokeKey',
  'begin',
  'getRecord',
  'complete',
  'abandon',
  'purge',
  'hitRateLimit',
]);

interface KeyRow {
  id: string;
  tenant: string;
  name: string;
  scopes: string[];
  hash: string;
  created_at: Date;
  revoked_at: Date | null;
}

const toKey = (row: KeyRow): ApiKeyRecord => ({
  id: row.id,
  tenant: row.tenant,
  name: row.name,
  scopes: row.scopes,
  hash: row.hash,
  createdAt: row.created_at.toISOString(),
  revokedAt: row.revoked_at ? row.revoked_at.toISOString() : null,
});

export class PgServiceStore implements ServiceStore {
  constructor(private readonly pool: pg.Pool) {}

  async insertKey(key: ApiKeyRecord): Promise<void> {
    await query(this.pool, Q.insertKey, [key.id, key.tenant, key.name, key.scopes, key.hash]);
  }

  async getKey(id: string): Promise<ApiKeyRecord | null> {
    const { rows } = await query<KeyRow>(this.pool, Q.getKey, [id]);
    return rows[0] ? toKey(rows[0]) : null;
  }

  async listKeys(tenant?: string): Promise<ApiKeyRecord[]> {
    const { rows } =
      tenant === undefined
        ? await query<KeyRow>(this.pool, Q.listKeys)
        : await query<KeyRow>(this.pool, Q.listTenantKeys, [tenant]);
    return rows.map(toKey);
  }

  async revokeKey(id: string): Promise<ApiKeyRecord | null> {
    const { rows } = await query<KeyRow>(this.pool, Q.revokeKey, [id]);
    return rows[0] ? toKey(rows[0]) : null;
  }

  async beginIdempotent(
    scope: string,
    key: string,
    fingerprint: string,
    inFlightTtlMs: number,
  ): Promise<IdempotencyBegin> {
    const { rows } = await query<{ started: number; fingerprint: string | null; response: StoredResponse | null }>(
      this.pool,
      Q.begin,
      [scope, key, fingerprint, inFlightTtlMs],
    );
    let row = rows[0]!;
    if (row.started === 1) return { state: 'started' };
    // The conflicting row was committed after this statement's snapshot: read it again.
    if (row.fingerprint === null) {
      const again = await query<{ started: number; fingerprint: string; response: StoredResponse | null }>(
        this.pool,
        Q.getRecord,
        [scope, key],
      );
      if (!again.rows[0]) return this.beginIdempotent(scope, key, fingerprint, inFlightTtlMs);
      row = { ...again.rows[0], started: 0 };
    }
    return row.response === null
      ? { state: 'in_flight', fingerprint: row.fingerprint! }
      : { state: 'done', fingerprint: row.fingerprint!, response: row.response };
  }

  async completeIdempotent(scope: string, key: string, response: StoredResponse, ttlMs: number): Promise<void> {
    await query(this.pool, Q.complete, [scope, key, JSON.stringify(response), ttlMs]);
  }

  async abandonIdempotent(scope: string, key: string): Promise<void> {
    await query(this.pool, Q.abandon, [scope, key]);
  }

  async purgeExpired(): Promise<number> {
    return Number((await query<{ n: string }>(this.pool, Q.purge)).rows[0]?.n ?? 0);
  }

  async hitRateLimit(key: string, windowMs: number): Promise<{ current: number; ttlMs: number }> {
    const { rows } = await query<{ current: number; ttl_ms: number }>(this.pool, Q.hitRateLimit, [key, windowMs]);
    return { current: rows[0]!.current, ttlMs: rows[0]!.ttl_ms };
  }
}
