/**
 * One better-sqlite3 connection per process, in WAL mode, shared safely by several processes.
 *
 * Why not only SQLite's own busy timeout: better-sqlite3 is synchronous, so a long busy wait
 * inside SQLite would freeze this process's event loop (and every HTTP request it serves)
 * while another process holds the write lock. So SQLite waits at most BLOCKING_WAIT_MS itself
 * (quick handoffs); past that we yield to the event loop for a short, growing, jittered delay
 * and try again, until `busyTimeoutMs` has passed (then `unavailable`, retriable).
 *
 * Why turns (wait-board.ts): SQLite's lock is not fair — the process that just committed takes
 * it straight back while the others sleep between attempts, which put claim p99 with 4 processes
 * at 60–300 ms. Writers on a file-backed database queue through a board beside the file instead.
 */
import Database, { type Statement } from 'better-sqlite3';
import { closeSync, constants, openSync, readSync } from 'node:fs';
import { endianness } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { DibsError, unavailable } from '../../core/errors.js';
import { loadMigrations } from '../shared/sql-files.js';
import { WaitBoard } from './wait-board.js';

export type Db = Database.Database;

export interface SqliteOptions {
  /** How long a write may wait for the database lock before failing with `unavailable`. */
  busyTimeoutMs: number;
  /** `full` (default) survives power loss; `normal` survives process crashes and is faster. */
  synchronous: 'full' | 'normal' | 'off';
}

const MIGRATIONS = new URL('./migrations/', import.meta.url);

/** The id of the newest migration this build carries. */
export const latestMigration = (): number => Math.max(0, ...loadMigrations(MIGRATIONS).map((m) => m.id));
/** SQLite's own (blocking) wait catches quick lock handoffs; kept short so the event loop never stalls long. */
const BLOCKING_WAIT_MS = 5;
/** Upper bound of the asynchronous backoff between lock attempts after that. */
const MAX_BACKOFF_MS = 8;
/** WAL frames not yet copied back that make a writer checkpoint: SQLite's own autocheckpoint default. */
const CHECKPOINT_FRAMES = 1000;

export async function openDatabase(filename: string, options: SqliteOptions): Promise<Db> {
  const db = new Database(filename);
  // Switching a new file to WAL takes a brief exclusive lock that racing openers may meet.
  await withBusyRetry(options, () => db.pragma('journal_mode = WAL'));
  db.pragma(`synchronous = ${options.synchronous.toUpperCase()}`);
  db.pragma('foreign_keys = ON');
  db.pragma('cache_size = -65536');
  db.pragma(`busy_timeout = ${BLOCKING_WAIT_MS}`);
  return db;
}

export function isBusy(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  return typeof code === 'string' && (code.startsWith('SQLITE_BUSY') || code.startsWith('SQLITE_LOCKED'));
}

/**
 * Runs `fn` atomically in a write transaction and resolves once it is COMMITTED (durable).
 *
 * Group commit: writes issued while this process waits for the write lock — or in the same turn
 * of the event loop — share ONE `BEGIN IMMEDIATE … COMMIT`, each inside its own savepoint
 * (better-sqlite3 nests `db.transaction` that way). A write that throws rolls back its savepoint
 * only; the others commit. So a burst of N claims costs one lock handoff and one fsync instead of
 * N, and nobody is answered before the commit that made their write durable.
 */
export function write<T>(db: Db, options: SqliteOptions, fn: () => T): Promise<T> {
  let batcher = batchers.get(db);
  if (!batcher) batchers.set(db, (batcher = new WriteBatcher(db, options)));
  return batcher.enqueue(fn);
}

/** Releases what the write path holds beside the connection; call before closing it. */
export function closeWrites(db: Db): void {
  batchers.get(db)?.close();
  batchers.delete(db);
}

interface QueuedWrite {
  fn: () => unknown;
  resolve(value: unknown): void;
  reject(error: unknown): void;
}

const batchers = new WeakMap<Db, WriteBatcher>();
/** Most writes in one transaction: bounds how long the lock is held and how much one failure re-runs. */
const MAX_BATCH = 256;

class WriteBatcher {
  private queue: QueuedWrite[] = [];
  private draining = false;
  private readonly board: WaitBoard | undefined;
  private readonly begin: Statement;
  private readonly commit: Statement;
  private readonly rollback: Statement;
  private readonly savepoint: Statement;
  private readonly release: Statement;
  private readonly rollbackTo: Statement;
  /**
   * The WAL index (`<file>-shm`) this process reads the WAL's length from, once it checkpoints
   * itself; null: not tried yet (SQLite creates the file with the first transaction).
   */
  private walIndex: WalIndex | undefined | null;
  private checkpointDue = false;

  constructor(
    private readonly db: Db,
    private readonly options: SqliteOptions,
  ) {
    this.board = WaitBoard.open(db.name);
    this.begin = db.prepare('BEGIN IMMEDIATE');
    this.commit = db.prepare('COMMIT');
    this.rollback = db.prepare('ROLLBACK');
    this.savepoint = db.prepare('SAVEPOINT dibs_write');
    this.release = db.prepare('RELEASE dibs_write');
    this.rollbackTo = db.prepare('ROLLBACK TO dibs_write');
    if (this.board) this.walIndex = null;
  }

  /**
   * One write of the batch in its own savepoint, so a write that throws undoes only itself.
   * Prepared once, not through `db.transaction(fn)`: that builds four wrapper functions per call,
   * which measured ~5% of a sale buy's CPU. A write that nests `db.transaction` gets a savepoint
   * of better-sqlite3's own name inside this one, as before.
   */
  private runOne(fn: () => unknown): unknown {
    this.savepoint.run();
    try {
      const value = fn();
      if (value && typeof (value as { then?: unknown }).then === 'function')
        throw new TypeError('a write step cannot return a promise');
      this.release.run();
      return value;
    } catch (error) {
      // An error that ended the whole transaction (e.g. SQLITE_FULL) leaves no savepoint to undo.
      if (this.db.inTransaction) {
        this.rollbackTo.run();
        this.release.run();
      }
      throw error;
    }
  }

  enqueue<T>(fn: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.queue.push({ fn, resolve: resolve as (value: unknown) => void, reject });
      if (!this.draining) {
        this.draining = true;
        // setImmediate, not a microtask: writes issued by I/O callbacks of the same loop turn join.
        setImmediate(() => void this.drain());
      }
    });
  }

  /**
   * BEGIN IMMEDIATE in turn with the other processes: stand back while an older waiter is alive,
   * otherwise try; on BUSY announce ourselves and poll again shortly. Gives up (`unavailable`)
   * after `busyTimeoutMs`, so nobody's wait is unbounded even if the board misleads.
   */
  private async acquire(): Promise<void> {
    const board = this.board;
    if (!board) {
      await withBusyRetry(this.options, () => this.begin.run());
      return;
    }
    const deadline = Date.now() + this.options.busyTimeoutMs;
    try {
      for (;;) {
        const now = performance.timeOrigin + performance.now();
        if (!board.shouldYield(now)) {
          try {
            this.begin.run();
            return;
          } catch (error) {
            if (!isBusy(error)) throw translate(error);
          }
        }
        if (Date.now() >= deadline)
          throw unavailable(`database is locked by another writer for more than ${this.options.busyTimeoutMs} ms`);
        board.wait(now);
        await board.pause();
      }
    } finally {
      board.done();
    }
  }

  close(): void {
    this.board?.close();
    this.walIndex?.close();
  }

  /**
   * After a commit that left CHECKPOINT_FRAMES or more in the WAL: a PASSIVE checkpoint (as
   * SQLite's autocheckpoint, same synchronous setting and fsyncs), run from setImmediate — after
   * the waiters were rung and the batch answered, with no transaction open. Never throws: a
   * checkpoint that cannot run now is retried after a later commit.
   */
  private checkpointSoon(): void {
    if (this.walIndex === null) {
      // Checkpoints leave COMMIT from the first commit on: SQLite runs its autocheckpoint inside
      // the COMMIT call, after the lock is free but before we can ring the waiters or answer the
      // batch, so the claims of every process waited for it. Kept when the WAL index cannot be read.
      this.walIndex = WalIndex.open(this.db.name);
      if (this.walIndex) this.db.pragma('wal_autocheckpoint = 0');
    }
    if (this.checkpointDue || !this.walIndex || this.walIndex.pending() < CHECKPOINT_FRAMES) return;
    this.checkpointDue = true;
    setImmediate(() => {
      this.checkpointDue = false;
      if (!this.db.open || this.db.inTransaction) return;
      try {
        this.db.pragma('wal_checkpoint(PASSIVE)');
      } catch {
        // busy or closed: the next commit past the mark tries again
      }
    });
  }

  private async drain(): Promise<void> {
    try {
      while (this.queue.length > 0) {
        const begun = await this.acquire().then(
          () => true,
          (error: unknown) => {
            for (const w of this.queue.splice(0)) w.reject(error);
            return false;
          },
        );
        if (!begun) continue;
        // Taken AFTER the lock: everything that queued while we waited for it rides along.
        const batch = this.queue.splice(0, MAX_BATCH);
        const outcomes = batch.map((w) => {
          try {
            return { ok: true as const, value: this.runOne(w.fn) };
          } catch (error) {
            return { ok: false as const, error: translate(error) };
          }
        });
        try {
          this.commit.run();
          this.board?.released(performance.timeOrigin + performance.now());
        } catch (error) {
          if (this.db.inTransaction) this.rollback.run();
          for (const w of batch) w.reject(translate(error));
          continue;
        }
        batch.forEach((w, i) => {
          const o = outcomes[i]!;
          if (o.ok) w.resolve(o.value);
          else w.reject(o.error);
        });
        this.checkpointSoon();
      }
    } finally {
      this.draining = false;
      // A write enqueued between the loop's last check and here would otherwise wait forever.
      if (this.queue.length > 0) {
        this.draining = true;
        setImmediate(() => void this.drain());
      }
    }
  }
}

/** The WAL index is in the machine's byte order. */
const LITTLE_ENDIAN = endianness() === 'LE';

/**
 * The WAL's length as the WAL index (`<file>-shm`, https://sqlite.org/walformat.html) records it:
 * mxFrame (frames in the WAL, header offset 16) less nBackfill (frames already copied into the
 * database, offset 96), both u32 in the machine's byte order. Only a hint for when to checkpoint:
 * a torn or stale read makes a checkpoint early or late, never wrong.
 */
class WalIndex {
  private readonly buf = Buffer.alloc(100);
  private constructor(private readonly fd: number) {}

  static open(filename: string): WalIndex | undefined {
    try {
      return new WalIndex(openSync(`${filename}-shm`, constants.O_RDONLY));
    } catch {
      return undefined;
    }
  }

  pending(): number {
    try {
      if (readSync(this.fd, this.buf, 0, 100, 0) < 100) return 0;
    } catch {
      return 0;
    }
    const frames = LITTLE_ENDIAN ? this.buf.readUInt32LE(16) : this.buf.readUInt32BE(16);
    const backfilled = LITTLE_ENDIAN ? this.buf.readUInt32LE(96) : this.buf.readUInt32BE(96);
    return frames - backfilled;
  }

  close(): void {
    try {
      closeSync(this.fd);
    } catch {
      // already closed
    }
  }
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
      if (Date.now() >= deadline)
        throw unavailable(`database is locked by another writer for more than ${options.busyTimeoutMs} ms`, error);
      await sleep(Math.random() * delayMs);
      delayMs = Math.min(delayMs * 2, MAX_BACKOFF_MS);
    }
  }
}

function translate(error: unknown): unknown {
  if (error instanceof DibsError) return error;
  const code = (error as { code?: unknown })?.code;
  if (code === 'SQLITE_FULL' || code === 'SQLITE_IOERR' || code === 'SQLITE_CANTOPEN')
    return unavailable(`sqlite: ${(error as Error).message}`, error);
  return error;
}

/**
 * Applies pending migrations, each in its own IMMEDIATE transaction that re-checks the ledger,
 * so several processes opening the same file at once apply each migration exactly once.
 */
export async function migrate(db: Db, options: SqliteOptions): Promise<number> {
  await write(db, options, () => {
    db.exec(
      `CREATE TABLE IF NOT EXISTS dibs_migrations (id INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at TEXT NOT NULL) STRICT`,
    );
  });
  let applied = 0;
  for (const migration of loadMigrations(MIGRATIONS)) {
    await write(db, options, () => {
      const done = db.prepare('SELECT 1 FROM dibs_migrations WHERE id = ?').get(migration.id);
      if (done) return;
      db.exec(migration.sql);
      db.prepare(
        `INSERT INTO dibs_migrations (id, name, applied_at) VALUES (?, ?, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))`,
      ).run(migration.id, migration.name);
      applied++;
    });
  }
  return applied;
}

export type Statements<Q> = Record<keyof Q, Statement<unknown[]>>;

/** Prepares every named query of a query file once, for the life of the connection. */
export function prepareAll<const Names extends string>(
  db: Db,
  queries: Record<Names, string>,
): Record<Names, Statement<unknown[]>> {
  return Object.fromEntries(Object.entries(queries).map(([name, sql]) => [name, db.prepare(sql as string)])) as Record<
    Names,
    Statement<unknown[]>
  >;
}

/** An outbox row as the event shape every backend returns. */
export function toEvent(row: {
  id: number;
  type: string;
  idempotency_key: string;
  payload: string;
  created_at: string;
}) {
  return {
    id: String(row.id),
    type: row.type,
    idempotencyKey: row.idempotency_key,
    payload: JSON.parse(row.payload) as Record<string, unknown>,
    createdAt: row.created_at,
  };
}
