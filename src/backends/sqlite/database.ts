/**
 * One better-sqlite3 connection per process, in WAL mode, shared safely by several processes.
 *
 * Why not only SQLite's own busy timeout: better-sqlite3 is synchronous, so a long busy wait
 * inside SQLite would freeze this process's event loop (and every HTTP request it serves)
 * while another process holds the write lock. So SQLite waits at most BLOCKING_WAIT_MS itself
 * (quick handoffs); past that we yield to the event loop for a short, growing, jittered delay
 * and try again, until `busyTimeoutMs` has passed (then `unavailable`, retriable).
 */
import Database, { type Statement } from 'better-sqlite3';
import { setTimeout as sleep } from 'node:timers/promises';
import { DibsError, unavailable } from '../../core/errors.js';
import { loadMigrations } from '../shared/sql-files.js';

export type Db = Database.Database;

export interface SqliteOptions {
  /** How long a write may wait for the database lock before failing with `unavailable`. */
  busyTimeoutMs: number;
  /** `full` (default) survives power loss; `normal` survives process crashes and is faster. */
  synchronous: 'full' | 'normal' | 'off';
}

const MIGRATIONS = new URL('./migrations/', import.meta.url);
/** SQLite's own (blocking) wait catches quick lock handoffs; kept short so the event loop never stalls long. */
const BLOCKING_WAIT_MS = 5;
/** Upper bound of the asynchronous backoff between lock attempts after that. */
const MAX_BACKOFF_MS = 8;

export async function openDatabase(filename: string, options: SqliteOptions): Promise<Db> {
  const db = new Database(filename);
  // Switching a new file to WAL takes a brief exclusive lock that racing openers may meet.
  await withBusyRetry(options, () => db.pragma('journal_mode = WAL'));
  db.pragma(`synchronous = ${options.synchronous.toUpperCase()}`);
  db.pragma('foreign_keys = ON');
  db.pragma(`busy_timeout = ${BLOCKING_WAIT_MS}`);
  return db;
}

export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

/** Runs `fn` in a `BEGIN IMMEDIATE` transaction, waiting (asynchronously) for the write lock. */
export async function write<T>(db: Db, options: SqliteOptions, fn: () => T): Promise<T> {
  const tx = db.transaction(fn);
  return withBusyRetry(options, () => tx.immediate());
}

/** Runs a read; WAL readers are never blocked by writers, but a checkpoint can briefly say BUSY. */
export async function read<T>(options: SqliteOptions, fn: () => T): Promise<T> {
  return withBusyRetry(options, fn);
}

async function withBusyRetry<T>(options: SqliteOptions, attempt: () => T): Promise<T> {
  const deadline = Date.now() + options.busyTimeoutMs;
  let delayMs = 0.25;
  for (;;) {
    try {
      return attempt();
    } catch (error) {
      if (!isBusy(error)) throw translate(error);
      if (Date.now() >= deadline) throw unavailable(`database is locked by another writer for more than ${options.busyTimeoutMs} ms`, error);
      await sleep(Math.random() * delayMs);
      delayMs = Math.min(delayMs * 2, MAX_BACKOFF_MS);
    }
  }
}

function translate(error: unknown): unknown {
  if (error instanceof DibsError) return error;
  const code = (error as { code?: unknown })?.code;
  if (code === 'SQLITE_FULL' || code === 'SQLITE_IOERR' || code === 'SQLITE_CANTOPEN') return unavailable(`sqlite: ${(error as Error).message}`, error);
  return error;
}

/**
 * Applies pending migrations, each in its own IMMEDIATE transaction that re-checks the ledger,
 * so several processes opening the same file at once apply each migration exactly once.
 */
export async function migrate(db: Db, options: SqliteOptions): Promise<number> {
  await write(db, options, () => {
    db.exec(`CREATE TABLE IF NOT EXISTS dibs_migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT`);
  });
  let applied = 0;
  for (const migration of loadMigrations(MIGRATIONS)) {
    await write(db, options, () => {
      const done = db.prepare('SELECT 1 FROM dibs_migrations WHERE id = ?').get(migration.id);
      if (done) return;
      db.exec(migration.sql);
      db.prepare(`INSERT INTO dibs_migrations (id, name, applied_at) VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`).run(migration.id, migration.name);
      applied++;
    });
  }
  return applied;
}

export type Statements<Q> = Record<keyof Q, Statement<unknown[]>>;

/** Prepares every named query of a query file once, for the life of the connection. */
export function prepareAll<const Names extends string>(db: Db, queries: Record<Names, string>): Record<Names, Statement<unknown[]>> {
  return Object.fromEntries(Object.entries(queries).map(([name, sql]) => [name, db.prepare(sql as string)])) as Record<Names, Statement<unknown[]>>;
}

/** An outbox row as the event shape every backend returns. */
export function toEvent(row: { id: number; type: string; idempotency_key: string; payload: string; created_at: string }) {
  return { id: String(row.id), type: row.type, idempotencyKey: row.idempotency_key, payload: JSON.parse(row.payload) as Record<string, unknown>, createdAt: row.created_at };
}
