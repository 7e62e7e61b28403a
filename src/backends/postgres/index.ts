/**
 * PostgreSQL backend. Store URLs: `postgres://user:pass@host:5432/db?schema=dibs&poolSize=10`
 * (`postgresql://` works too). dibs' own query parameters are removed before the URL reaches `pg`;
 * every other parameter (sslmode, application_name, …) is passed through.
 *   schema            schema holding dibs' tables (default `dibs`; created on first open)
 *   poolSize          connections of this process (default 10)
 *   grouped           `false` turns grouped claims and grouped sale steps off (default on)
 *   groupMax          most claims (or sale steps) served by one grouped statement (default 64)
 *   groupConcurrency  grouped statements of one pool in flight (default poolSize)
 *   connectTimeoutMs  wait for a connection before `unavailable` (default 10000)
 *   queryTimeoutMs    a statement unanswered this long is `unavailable`, its connection dropped (default 60000)
 *   statementTimeoutMs          server-side statement_timeout (default 80% of queryTimeoutMs)
 *   lockTimeoutMs               server-side lock_timeout (default = statementTimeoutMs)
 *   idleInTransactionTimeoutMs  server-side idle_in_transaction_session_timeout (default
 *                               min(10000, statementTimeoutMs)); all three must stay below queryTimeoutMs
 *   pooler            `transaction` when the URL points at a pooler in transaction mode (PgBouncer
 *                     pool_mode=transaction): no session state is assumed (see pooler.ts)
 *   listen            with a pooler: a direct postgres:// URL (URL-encoded) for the one LISTEN
 *                     connection of lock wake-ups; without it waiters poll (about every 200 ms)
 * Options passed to openDibs() with the same names override the URL.
 *
 * Several hosts (a primary and its standbys), libpq style:
 *   postgres://user@db1:5432,db2:5432/app?target_session_attrs=read-write
 *   target_session_attrs  read-write (default with several hosts): connections go to the host that
 *                         accepts writes, found by probing in URL order and re-found after a
 *                         failover; `any`: the first host that answers (see primary.ts)
 */
import pg from 'pg';
import type { Backend, BackendFactory, BackendOptions } from '../../core/backend.js';
import { DibsError } from '../../core/errors.js';
import type { Health } from '../../core/types.js';
import { createPool, query, sessionOptions, translate, type PgOptions } from './connection.js';
import { parseHosts, parseSessionAttrs } from './hosts.js';
import { primaryClient, PrimarySelector } from './primary.js';
import { latestMigration, migrate, migratePooled, schemaIsCurrent } from './migrate.js';
import { PgOutbox } from './outbox.js';
import { PgPools } from './pools.js';
import { PgServiceStore } from './service.js';
import { PgSales } from './sales.js';
import { PgGrants } from './grants.js';
import { PgWaitingRooms } from './waiting-room.js';
import { PgForecasts } from './forecast.js';
import { PgCounters } from './counters.js';
import { lockChannel, ReleaseListener } from './listener.js';
import { PgLocks } from './locks.js';
import { PgLimits } from './limits.js';

export const DIBS_PARAMS = [
  'schema',
  'poolSize',
  'grouped',
  'groupMax',
  'groupConcurrency',
  'connectTimeoutMs',
  'queryTimeoutMs',
  'statementTimeoutMs',
  'lockTimeoutMs',
  'idleInTransactionTimeoutMs',
  'hosts',
  'target_session_attrs',
  'pooler',
  'listen',
] as const;

/** How long a claim keeps retrying races (claim.ts) — part of an operation's longest run. */
const CLAIM_RETRY_MS = 10_000;

export class PostgresBackend implements Backend {
  readonly kind = 'postgres';
  readonly pools: PgPools;
  readonly service: PgServiceStore;
  readonly sales: PgSales;
  /** Tiered mode's grant ledger (capacity escrowed to a Redis fast path). */
  readonly grants: PgGrants;
  readonly waitingRooms: PgWaitingRooms;
  readonly forecasts: PgForecasts;
  readonly outbox: PgOutbox;
  readonly locks: PgLocks;
  readonly limits: PgLimits;
  readonly counters: PgCounters;
  /**
   * The longest one operation may keep running against the store before it answers: a wait for a
   * connection and a statement, twice (a claim's fast statement, then the full one), plus the claim
   * retry deadline. The HTTP service keeps a request's in-flight idempotency record longer.
   */
  readonly operationTimeoutMs: number;
  /** The one LISTEN connection of this instance (lock wake-ups); connected on first use. */
  readonly releaseListener: ReleaseListener;
  private closed: Promise<void> | null = null;

  constructor(
    private readonly pool: pg.Pool,
    readonly options: PgOptions,
    connectionString: string,
    /** Set when the URL names several hosts (or target_session_attrs): finds the primary. */
    readonly selector?: PrimarySelector,
  ) {
    this.pools = new PgPools(pool, options);
    this.service = new PgServiceStore(pool);
    this.sales = new PgSales(pool, options);
    this.grants = new PgGrants(pool);
    this.waitingRooms = new PgWaitingRooms(pool, this.sales);
    this.forecasts = new PgForecasts(pool);
    this.outbox = new PgOutbox(pool);
    // LISTEN needs a session of its own: behind a transaction pooler only a direct URL gives one;
    // without a listen= URL it follows the primary like the pool's connections.
    const listenUrl = options.pooler ? options.listenUrl : (options.listenUrl ?? connectionString);
    this.releaseListener = new ReleaseListener(
      listenUrl,
      lockChannel(options.schema),
      options.connectTimeoutMs,
      selector && !options.listenUrl ? primaryClient(selector) : pg.Client,
    );
    this.locks = new PgLocks(pool, this.releaseListener);
    this.limits = new PgLimits(pool);
    this.counters = new PgCounters(pool);
    this.operationTimeoutMs = 2 * (options.connectTimeoutMs + options.queryTimeoutMs) + CLAIM_RETRY_MS;
  }

  async health(): Promise<Health> {
    try {
      const { rows } = await query<{ version: string; migration: number | null }>(
        this.pool,
        `SELECT current_setting('server_version') AS version, (SELECT max(id) FROM migrations) AS migration`,
      );
      return {
        ok: this.closed === null,
        backend: this.kind,
        details: {
          schema: this.options.schema,
          serverVersion: rows[0]!.version,
          migration: rows[0]!.migration,
          poolSize: this.options.poolSize,
          grouped: this.options.grouped,
          connections: this.pool.totalCount,
          queryTimeoutMs: this.options.queryTimeoutMs,
          statementTimeoutMs: this.options.statementTimeoutMs,
          lockTimeoutMs: this.options.lockTimeoutMs,
          idleInTransactionTimeoutMs: this.options.idleInTransactionTimeoutMs,
          ...(this.selector
            ? {
                primary: this.selector.primary && `${this.selector.primary.host}:${this.selector.primary.port}`,
                hosts: this.selector.hosts.length,
              }
            : {}),
        },
        migrations: { applied: rows[0]!.migration, expected: latestMigration() },
      };
    } catch (error) {
      return {
        ok: false,
        backend: this.kind,
        details: { schema: this.options.schema, error: error instanceof Error ? error.message : String(error) },
      };
    }
  }

  close(): Promise<void> {
    this.closed ??= Promise.all([this.releaseListener.close(), this.pool.end()]).then(() => undefined);
    return this.closed;
  }
}

export const openPostgres: BackendFactory = async (url, overrides) => {
  const options = parseOptions(url, overrides);
  const connectionUrl = new URL(url.href);
  for (const name of DIBS_PARAMS) connectionUrl.searchParams.delete(name);
  const selector = hostSelector(url, connectionUrl.href, options);
  const pool = createPool(connectionUrl.href, options, selector && primaryClient(selector));
  try {
    const client = await pool.connect().catch((error: unknown) => {
      throw translate(error);
    });
    try {
      // Cold start: one cheap statement when the schema is current (the usual case for a
      // serverless instance); the migration run (advisory lock, DDL checks) only when it is not.
      if (!(await schemaIsCurrent(client, options.schema)))
        await (options.pooler ? migratePooled : migrate)(client, options.schema);
    } finally {
      client.release();
    }
  } catch (error) {
    await pool.end().catch(() => {});
    throw translate(error);
  }
  return new PostgresBackend(pool, options, connectionUrl.href, selector);
};

/** A PrimarySelector when the URL names several hosts or asks for target_session_attrs; none otherwise (plain pg). */
function hostSelector(url: URL, connectionString: string, options: PgOptions): PrimarySelector | undefined {
  const list = url.searchParams.get('hosts');
  const attrsParam = url.searchParams.get('target_session_attrs');
  if (list === null && attrsParam === null) return undefined;
  try {
    const hosts = parseHosts(list, url);
    const attrs = parseSessionAttrs(attrsParam);
    return new PrimarySelector(
      hosts,
      attrs,
      { connectionString, ...(options.pooler ? {} : { options: sessionOptions(options) }) },
      options.connectTimeoutMs,
    );
  } catch (error) {
    throw bad((error as Error).message);
  }
}

export function parseOptions(url: URL, overrides: BackendOptions = {}): PgOptions {
  const param = (name: string): string | undefined => {
    const value = overrides[name];
    if (value !== undefined) return String(value);
    return url.searchParams.get(name) ?? undefined;
  };
  const schema = param('schema') ?? 'dibs';
  if (!/^[A-Za-z_][A-Za-z0-9_]{0,62}$/.test(schema))
    throw bad('schema must be a plain identifier (letters, digits, _)');
  const poolSize = int(param('poolSize'), 10, 1, 1000, 'poolSize');
  const grouped = param('grouped');
  if (grouped !== undefined && !['true', 'false', '1', '0'].includes(grouped))
    throw bad('grouped must be true or false');
  const queryTimeoutMs = int(param('queryTimeoutMs'), 60_000, 100, 3_600_000, 'queryTimeoutMs');
  // below the client's timeout by a margin for a statement's trip to the server
  const statementTimeoutMs = int(
    param('statementTimeoutMs'),
    Math.floor(queryTimeoutMs * 0.8),
    50,
    queryTimeoutMs - 1,
    'statementTimeoutMs',
  );
  const lockTimeoutMs = int(param('lockTimeoutMs'), statementTimeoutMs, 50, queryTimeoutMs - 1, 'lockTimeoutMs');
  const idleInTransactionTimeoutMs = int(
    param('idleInTransactionTimeoutMs'),
    Math.min(10_000, statementTimeoutMs),
    50,
    queryTimeoutMs - 1,
    'idleInTransactionTimeoutMs',
  );
  const pooler = param('pooler');
  if (pooler !== undefined && pooler !== 'transaction' && pooler !== 'none')
    throw bad("pooler must be 'transaction' (PgBouncer in transaction mode) or 'none'");
  const listenUrl = param('listen');
  if (listenUrl !== undefined && !/^postgres(ql)?:\/\//.test(listenUrl))
    throw bad('listen must be a postgres:// URL (URL-encoded inside the store URL)');
  return {
    schema,
    poolSize,
    grouped: grouped === undefined ? true : grouped === 'true' || grouped === '1',
    groupMax: int(param('groupMax'), 64, 1, 1000, 'groupMax'),
    groupConcurrency: int(param('groupConcurrency'), poolSize, 1, 1000, 'groupConcurrency'),
    connectTimeoutMs: int(param('connectTimeoutMs'), 10_000, 1, 600_000, 'connectTimeoutMs'),
    queryTimeoutMs,
    statementTimeoutMs,
    lockTimeoutMs,
    idleInTransactionTimeoutMs,
    pooler: pooler === 'transaction' ? 'transaction' : null,
    listenUrl: listenUrl ?? null,
  };
}

function int(raw: string | undefined, fallback: number, min: number, max: number, name: string): number {
  if (raw === undefined) return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max)
    throw bad(`${name} must be a whole number from ${min} to ${max}`);
  return value;
}

const bad = (message: string) => new DibsError('invalid_input', `store: ${message}`, { field: 'store' });
