/**
 * Connections: one `pg` pool per Dibs, every connection pinned to dibs' schema through the
 * startup `search_path` option (so SQL files name tables without a schema and a PgBouncer in
 * transaction mode still sees the right schema on every statement). Driver failures are
 * translated here, once: connection loss and timeouts become `unavailable` (retriable).
 */
import pg from 'pg';
import { DibsError, unavailable } from '../../core/errors.js';
import { refuseUnreplicatedCommits } from './sync-commit.js';
import { localSettings, scopeToTransactions } from './pooler.js';
import { isStalePlan, replanStaleStatements } from './stale-plans.js';

export interface PgOptions {
  /** Schema holding dibs' tables (created by the migrations). */
  schema: string;
  /** Maximum connections of this process. */
  poolSize: number;
  /** Serve concurrent single claims of one pool (claim.sql), and concurrent steps of one sale (sale-group.sql), with one statement. */
  grouped: boolean;
  /** Most claims (or sale steps) served by one grouped statement. */
  groupMax: number;
  /** Grouped statements of one pool running at once in this process. */
  groupConcurrency: number;
  /** How long to wait for a free connection (and to connect) before `unavailable`. */
  connectTimeoutMs: number;
  /**
   * How long one statement may go unanswered before `unavailable` (and the connection is dropped).
   * Without it a connection whose route died silently (no RST, no FIN: a crashed NAT, a
   * black-holed link) leaves the call waiting forever — found by test/faults.
   */
  queryTimeoutMs: number;
  /**
   * Server-side limits of every dibs session, all shorter than queryTimeoutMs: the client's timeout
   * alone leaves a one-sided partition to the server, which keeps running — and may commit — a
   * statement the client gave up on, and keeps a transaction's row locks until the kernel gives up
   * on the socket (hours). statement_timeout cancels a statement before the client's timeout
   * answers `unavailable`; idle_in_transaction_session_timeout ends a session whose transaction
   * waits for a client that is gone; lock_timeout bounds a wait for a row lock.
   */
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
  /**
   * `transaction`: connections go through a pooler in transaction mode (PgBouncer): settings per
   * transaction, no named prepared statements, no session state (pooler.ts).
   */
  pooler: 'transaction' | null;
  /** A direct (not pooled) connection URL for LISTEN (lock wake-ups); null = none. */
  listenUrl: string | null;
}

/** Server-side TCP keepalive and unacknowledged-data limits (seconds / ms): a dead client is noticed in about a minute. */
const SERVER_TCP = { keepalivesIdleS: 30, keepalivesIntervalS: 10, keepalivesCount: 3, userTimeoutMs: 30_000 };

/** The startup options of every dibs connection: schema, plan cache, and the server-side limits above. */
export function sessionOptions(options: PgOptions): string {
  return [
    `search_path=${quoteIdent(options.schema)}`,
    // Generic plans for dibs' prepared statements: the claim statement is a dozen CTEs whose
    // custom re-planning on every execution cost more CPU than executing it (0.42 ms planning vs
    // 0.28 ms execution), and its best plan does not depend on the parameter values.
    'plan_cache_mode=force_generic_plan',
    `statement_timeout=${options.statementTimeoutMs}`,
    `lock_timeout=${options.lockTimeoutMs}`,
    `idle_in_transaction_session_timeout=${options.idleInTransactionTimeoutMs}`,
    // ignored (read as 0) on a Unix-domain socket
    `tcp_keepalives_idle=${SERVER_TCP.keepalivesIdleS}`,
    `tcp_keepalives_interval=${SERVER_TCP.keepalivesIntervalS}`,
    `tcp_keepalives_count=${SERVER_TCP.keepalivesCount}`,
    `tcp_user_timeout=${SERVER_TCP.userTimeoutMs}`,
  ]
    .map((setting) => `-c ${setting}`)
    .join(' ');
}

export type Pool = pg.Pool;
export type Client = pg.PoolClient;

import { quoteIdent } from './identifiers.js';

export { quoteIdent };

export function createPool(connectionString: string, options: PgOptions, Client?: typeof pg.Client): pg.Pool {
  const pool = new pg.Pool({
    connectionString,
    // several hosts: connections go to the primary (primary.ts)
    ...(Client ? { Client } : {}),
    max: options.poolSize,
    connectionTimeoutMillis: options.connectTimeoutMs,
    query_timeout: options.queryTimeoutMs,
    // TCP keepalive lets the kernel notice a dead peer on an idle connection
    keepAlive: true,
    idleTimeoutMillis: 30_000,
    // A pooler in transaction mode refuses the `options` startup parameter and would not keep
    // session settings anyway: there they are set per transaction (pooler.ts).
    ...(options.pooler ? {} : { options: sessionOptions(options) }),
  });
  if (options.pooler) {
    const settings = localSettings(options);
    pool.on('connect', (client) => scopeToTransactions(client, settings));
  } else pool.on('connect', replanStaleStatements);
  // An idle connection killed by the server (restart, pg_terminate_backend) emits 'error' on the
  // pool; without a listener Node would crash the process. The pool drops it and reconnects.
  pool.on('error', () => {});
  // The same for a checked-out connection killed between two statements: the next statement on
  // it then fails ("not queryable" → unavailable) and the broken client is discarded.
  pool.on('connect', (client) => client.on('error', () => {}));
  pool.on('connect', refuseUnreplicatedCommits);
  trackSlots(pool);
  return pool;
}

const slots = new WeakMap<pg.ClientBase, number>();

/**
 * Numbers this pool's connections: each open connection holds a different slot (the lowest one
 * free when it connected), offset by a random number per pool so that processes spread out.
 * Claims take their counter shard from their connection's slot, so two claims in flight in one
 * process never update the same counter row — a shared row would make one wait for the other's
 * commit (measured: about one of 16 connections was always in that wait with random shards).
 */
function trackSlots(pool: pg.Pool): void {
  const offset = Math.floor(Math.random() * (1 << 20));
  const used = new Set<number>();
  pool.on('connect', (client) => {
    let slot = 0;
    while (used.has(slot)) slot++;
    used.add(slot);
    slots.set(client, offset + slot);
  });
  pool.on('remove', (client) => {
    const slot = slots.get(client);
    if (slot !== undefined) used.delete(slot - offset);
  });
}

/** The connection's slot (see trackSlots); a random one for a client not made by createPool. */
export function connectionSlot(client: pg.ClientBase): number {
  return slots.get(client) ?? Math.floor(Math.random() * (1 << 20));
}

// SQLSTATE classes that mean "the connection or server is gone / busy", i.e. worth retrying — and
// the server-side limits: 57014 statement_timeout (or a cancel), 55P03 lock_timeout, 25P03
// idle_in_transaction_session_timeout. Each rolled the statement or transaction back. 25006
// read_only_sql_transaction on a write: the server is a standby (a primary demoted under us, a
// URL naming a replica); the connection is dropped and the next one looks for the primary.
const UNAVAILABLE_STATES = /^(08|53|57P0[1-4]|58|57014$|55P03$|25P03$|25006$)/;
const UNAVAILABLE_NODE = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'EPIPE',
  'ETIMEDOUT',
  'ENOTFOUND',
  'EHOSTUNREACH',
  'EAI_AGAIN',
]);

export function isUnavailable(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  if (typeof code === 'string' && (UNAVAILABLE_STATES.test(code) || UNAVAILABLE_NODE.has(code))) return true;
  const message = error instanceof Error ? error.message : '';
  return /Connection terminated|connection timeout|timeout exceeded when trying to connect|Client has encountered a connection error|Connection closed|not queryable|Query read timeout/i.test(
    message,
  );
}

export const sqlState = (error: unknown): string | undefined => {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' ? code : undefined;
};

/** The SQLSTATE behind an error, also when it was already translated into a DibsError. */
export const causeState = (error: unknown): string | undefined =>
  error instanceof DibsError ? sqlState(error.cause) : sqlState(error);

/** Maps a driver error to a DibsError; DibsErrors pass through. */
export function translate(error: unknown): unknown {
  if (error instanceof DibsError) return error;
  if (isUnavailable(error)) return unavailable(`postgres: ${(error as Error).message}`, error);
  // a statement made stale by another build's schema change, in a transaction (stale-plans.ts): nothing ran
  if (sqlState(error) === '40001' || sqlState(error) === '40P01' || isStalePlan(error))
    return unavailable(`postgres: ${(error as Error).message}`, error);
  return error;
}

/** Runs `fn` with one connection, released (or destroyed when broken) afterwards. */
export async function withClient<T>(pool: pg.Pool, fn: (client: pg.PoolClient) => Promise<T>): Promise<T> {
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (error) {
    throw translate(error);
  }
  let broken: Error | undefined;
  try {
    return await fn(client);
  } catch (error) {
    if (isUnavailable(error)) broken = error as Error;
    throw translate(error);
  } finally {
    client.release(broken);
  }
}

/** Runs `fn` inside BEGIN … COMMIT on one connection; any failure rolls back. */
export async function withTransaction<T>(
  pool: pg.Pool,
  fn: (client: pg.PoolClient) => Promise<T>,
  begin = 'BEGIN',
): Promise<T> {
  return withClient(pool, async (client) => {
    await client.query(begin);
    try {
      const result = await fn(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      // The rollback may fail too when the connection is gone; the server rolls back then.
      await client.query('ROLLBACK').catch(() => {});
      throw error;
    }
  });
}

/**
 * One statement on any connection of the pool (autocommit). Not `pool.query`: that closes the
 * connection on ANY error, so a unique violation, a deadlock victim or a lock timeout cost a new
 * connection and a first plan of every prepared statement on it; withClient closes only a
 * connection that is gone.
 */
export async function query<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  text: string,
  values: unknown[] = [],
): Promise<pg.QueryResult<R>> {
  return withClient(pool, (client) => client.query<R>(text, values));
}

/**
 * A hot statement as a named prepared statement: parsed and planned once per connection instead
 * of on every call (planning the claim CTE costs about as much as executing it).
 */
export function prepared(name: string, text: string, values: unknown[]): pg.QueryConfig {
  return { name, text, values };
}

/** A hot statement as a named prepared statement on any connection of the pool (autocommit), errors translated. */
export async function queryPrepared<R extends pg.QueryResultRow>(
  pool: pg.Pool,
  name: string,
  text: string,
  values: unknown[],
): Promise<pg.QueryResult<R>> {
  return withClient(pool, (client) => client.query<R>(prepared(name, text, values)));
}
