/** The HTTP service's keys and idempotency records in SQLite (one IMMEDIATE transaction per step). */
import type { ApiKeyRecord, IdempotencyBegin, ServiceStore, StoredResponse } from '../../core/service-store.js';
import { loadQueries } from '../shared/sql-files.js';
import { prepareAll, read, write, type Db, type SqliteOptions, type Statements } from './database.js';

const Q = loadQueries(new URL('./service.sql', import.meta.url), [
  'now',
  'insertKey',
  'getKey',
  'listKeys',
  'listTenantKeys',
  'revokeKey',
  'deleteExpired',
  'insertPending',
  'getRecord',
  'complete',
  'abandon',
  'purge',
]);

interface KeyRow {
  id: string;
  tenant: string;
  name: string;
  scopes: string;
  hash: string;
  created_at: string;
  revoked_at: string | null;
}

const toKey = (row: KeyRow): ApiKeyRecord => ({
  id: row.id,
  tenant: row.tenant,
  name: row.name,
  scopes: JSON.parse(row.scopes) as string[],
  hash: row.hash,
  createdAt: row.created_at,
  revokedAt: row.revoked_at,
});

export class SqliteServiceStore implements ServiceStore {
  private readonly stmt: Statements<typeof Q>;

  constructor(
    private readonly db: Db,
    private readonly options: SqliteOptions,
  ) {
    this.stmt = prepareAll(db, Q);
  }

  private now(): number {
    return (this.stmt.now.get() as { now: number }).now;
  }

  async insertKey(key: ApiKeyRecord): Promise<void> {
    await write(this.db, this.options, () => this.stmt.insertKey.run({ ...key, scopes: JSON.stringify(key.scopes) }));
  }

  async getKey(id: string): Promise<ApiKeyRecord | null> {
    const row = await read(this.options, () => this.stmt.getKey.get(id) as KeyRow | undefined);
    return row ? toKey(row) : null;
  }

  async listKeys(tenant?: string): Promise<ApiKeyRecord[]> {
    const rows = await read(
      this.options,
      () => (tenant === undefined ? this.stmt.listKeys.all() : this.stmt.listTenantKeys.all(tenant)) as KeyRow[],
    );
    return rows.map(toKey);
  }

  async revokeKey(id: string): Promise<ApiKeyRecord | null> {
    const row = await write(this.db, this.options, () => this.stmt.revokeKey.get(id) as KeyRow | undefined);
    return row ? toKey(row) : null;
  }

  async beginIdempotent(
    scope: string,
    key: string,
    fingerprint: string,
    inFlightTtlMs: number,
  ): Promise<IdempotencyBegin> {
    return write(this.db, this.options, () => {
      const now = this.now();
      this.stmt.deleteExpired.run({ scope, key, now });
      if (this.stmt.insertPending.run({ scope, key, fingerprint, now, ttlMs: inFlightTtlMs }).changes === 1)
        return { state: 'started' as const };
      const row = this.stmt.getRecord.get({ scope, key }) as { fingerprint: string; response: string | null };
      return row.response === null
        ? { state: 'in_flight' as const, fingerprint: row.fingerprint }
        : {
            state: 'done' as const,
            fingerprint: row.fingerprint,
            response: JSON.parse(row.response) as StoredResponse,
          };
    });
  }

  async completeIdempotent(scope: string, key: string, response: StoredResponse, ttlMs: number): Promise<void> {
    await write(this.db, this.options, () =>
      this.stmt.complete.run({ scope, key, response: JSON.stringify(response), now: this.now(), ttlMs }),
    );
  }

  async abandonIdempotent(scope: string, key: string): Promise<void> {
    await write(this.db, this.options, () => this.stmt.abandon.run({ scope, key }));
  }

  async purgeExpired(): Promise<number> {
    return write(this.db, this.options, () => this.stmt.purge.run({ now: this.now() }).changes);
  }
}
