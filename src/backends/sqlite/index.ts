/**
 * Embedded SQLite backend (the default). Store URLs:
 *   sqlite:./dibs.db            relative file
 *   sqlite:///var/lib/dibs.db   absolute file
 *   sqlite::memory:             in-memory (one process only)
 * Query parameters: busyTimeoutMs (default 10000), synchronous (full | normal | off; default full).
 */
import { SqliteGrants } from './grants.js';
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import type { Backend, BackendFactory } from '../../core/backend.js';
import { DibsError } from '../../core/errors.js';
import type { Health } from '../../core/types.js';
import { closeWrites, latestMigration, migrate, openDatabase, type Db, type SqliteOptions } from './database.js';
import { assertSqliteRunsHere } from './node-support.js';
import { SqlitePools } from './pools.js';
import { SqliteSales } from './sales.js';
import { SqliteOutbox } from './outbox.js';
import { SqliteLocks } from './locks.js';
import { SqliteLimits } from './limits.js';
import { SqliteCounters } from './counters.js';
import { SqliteWaitingRooms } from './waiting-room.js';
import { SqliteForecasts } from './forecast.js';
import { SqliteServiceStore } from './service.js';

export class SqliteBackend implements Backend {
  readonly kind = 'sqlite';
  readonly pools: SqlitePools;
  readonly sales: SqliteSales;
  /** Tiered mode's grant ledger (capacity escrowed to a Redis fast path). */
  readonly grants: SqliteGrants;
  readonly outbox: SqliteOutbox;
  readonly locks: SqliteLocks;
  readonly counters: SqliteCounters;
  readonly limits: SqliteLimits;
  readonly waitingRooms: SqliteWaitingRooms;
  readonly forecasts: SqliteForecasts;
  readonly service: SqliteServiceStore;
  private closed = false;

  constructor(
    private readonly db: Db,
    readonly filename: string,
    options: SqliteOptions,
  ) {
    this.pools = new SqlitePools(db, options);
    this.sales = new SqliteSales(db, options);
    this.grants = new SqliteGrants(db, options, this.sales);
    this.outbox = new SqliteOutbox(db, options);
    this.locks = new SqliteLocks(db, options, filename);
    this.counters = new SqliteCounters(db, options);
    this.limits = new SqliteLimits(db, options);
    this.waitingRooms = new SqliteWaitingRooms(db, options, this.sales);
    this.forecasts = new SqliteForecasts(db, options);
    this.service = new SqliteServiceStore(db, options);
  }

  async health(): Promise<Health> {
    const migrations = this.db.prepare('SELECT MAX(id) AS id FROM dibs_migrations').get() as { id: number | null };
    return {
      ok: !this.closed && this.db.open,
      backend: this.kind,
      details: {
        file: this.filename,
        journalMode: this.db.pragma('journal_mode', { simple: true }),
        synchronous: ['off', 'normal', 'full', 'extra'][this.db.pragma('synchronous', { simple: true }) as number],
        migration: migrations.id,
      },
      migrations: { applied: migrations.id, expected: latestMigration() },
    };
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    this.locks.close();
    closeWrites(this.db);
    this.db.close();
  }
}

export const openSqlite: BackendFactory = async (url) => {
  assertSqliteRunsHere();
  const filename = filenameOf(url);
  const options: SqliteOptions = {
    busyTimeoutMs: numberParam(url, 'busyTimeoutMs', 10_000),
    synchronous: enumParam(url, 'synchronous', ['full', 'normal', 'off'] as const, 'full'),
  };
  if (filename !== ':memory:') mkdirSync(dirname(filename), { recursive: true });
  const db = await openDatabase(filename, options);
  try {
    await migrate(db, options);
  } catch (error) {
    db.close();
    throw error;
  }
  return new SqliteBackend(db, filename, options);
};

function filenameOf(url: URL): string {
  // `sqlite:./x.db` → './x.db'; `sqlite:///abs/x.db` → '/abs/x.db'; `sqlite::memory:` → ':memory:'
  const path = decodeURIComponent(url.host ? `${url.host}${url.pathname}` : url.pathname);
  if (!path)
    throw new DibsError('invalid_input', 'store: a sqlite URL needs a file, e.g. sqlite:./dibs.db', { field: 'store' });
  return path;
}

function numberParam(url: URL, name: string, fallback: number): number {
  const raw = url.searchParams.get(name);
  if (raw === null) return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value < 0)
    throw new DibsError('invalid_input', `store: ${name} must be a non-negative number`, { field: 'store' });
  return value;
}

function enumParam<T extends string>(url: URL, name: string, allowed: readonly T[], fallback: T): T {
  const raw = url.searchParams.get(name)?.toLowerCase();
  if (raw === undefined) return fallback;
  if (!(allowed as readonly string[]).includes(raw))
    throw new DibsError('invalid_input', `store: ${name} must be one of ${allowed.join(', ')}`, { field: 'store' });
  return raw as T;
}
