/**
 * SQLite leases/semaphores: each operation is one BEGIN IMMEDIATE transaction that reads the
 * clock, sweeps lapsed holders, counts and grants — so two processes can never both get the
 * last slot. Release wake-ups reach waiters of this process through an EventEmitter per key, and
 * waiters of other processes on the same database file through a wake file beside it
 * (`<db>-lockwake`): a release with no waiter in its own process rewrites it, and every process
 * with waiters watches it (inotify
 * and the like, via fs.watch) and lets all its waiters try again. The facade's safety-net poll
 * still covers a missed event (a file system without change notification, an in-memory store).
 */
import { EventEmitter } from 'node:events';
import { watch, writeFileSync, type FSWatcher } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { randomBytes } from 'node:crypto';
import type { LockBackend } from '../../core/locks/backend.js';
import { leaseLost, notOwner } from '../../core/locks/errors.js';
import type { LeaseGrant, LockInfo } from '../../core/locks/types.js';
import type { Page } from '../../core/types.js';
import { loadQueries } from '../shared/sql-files.js';
import { prepareAll, read, write, type Db, type SqliteOptions } from './database.js';

const Q = loadQueries(new URL('./locks.sql', import.meta.url), [
  'nowMs',
  'sweep',
  'holderCount',
  'nextFence',
  'insertHolder',
  'extendHolder',
  'deleteHolder',
  'liveHolders',
  'lastFence',
  'ticketOf',
  'ticketsAhead',
  'dropTicket',
  'listKeys',
]);

export class SqliteLocks implements LockBackend {
  private readonly s;
  private readonly released = new EventEmitter().setMaxListeners(0);
  /** The wake file shared by every process on this database (none for an in-memory store). */
  private readonly wakeFile: string | null;
  private watcher: FSWatcher | null = null;
  private closed = false;

  constructor(
    private readonly db: Db,
    private readonly options: SqliteOptions,
    filename = ':memory:',
  ) {
    this.s = prepareAll(db, Q);
    this.wakeFile = filename === ':memory:' || filename === '' ? null : `${filename}-lockwake`;
  }

  async tryAcquire(key: string, limit: number, ttlMs: number): Promise<LeaseGrant | null> {
    const token = randomBytes(16).toString('base64url');
    return write(this.db, this.options, () => {
      const now = this.now();
      this.s.sweep.run(key, now);
      const { n } = this.s.holderCount.get(key) as { n: number };
      if (n >= limit) return null;
      return this.grantLocked(key, token, ttlMs, now);
    });
  }

  async tryAcquireFair(
    key: string,
    limit: number,
    ttlMs: number,
    queueKey: string,
    ticket: string | null,
  ): Promise<LeaseGrant | null> {
    const token = randomBytes(16).toString('base64url');
    return write(this.db, this.options, () => {
      const now = this.now();
      this.s.sweep.run(key, now);
      let mine = Number.MAX_SAFE_INTEGER;
      if (ticket !== null) {
        const row = this.s.ticketOf.get(queueKey, ticket, now) as { fence: number } | undefined;
        if (!row) return null; // the ticket lapsed: its owner takes a new one
        mine = row.fence;
      }
      const { n } = this.s.holderCount.get(key) as { n: number };
      if (n >= limit) return null;
      const ahead = (this.s.ticketsAhead.get(queueKey, now, mine) as { n: number }).n;
      if (n + ahead >= limit) return null;
      if (ticket !== null) this.s.dropTicket.run(queueKey, ticket);
      return this.grantLocked(key, token, ttlMs, now);
    });
  }

  async renew(key: string, token: string, ttlMs: number): Promise<LeaseGrant> {
    return write(this.db, this.options, () => {
      const now = this.now();
      const expiresMs = now + ttlMs;
      const row = this.s.extendHolder.get({ key, token, now, expiresMs }) as { fence: number } | undefined;
      if (!row) throw leaseLost(key);
      return grant(token, row.fence, expiresMs, this.now());
    });
  }

  async release(key: string, token: string): Promise<void> {
    await write(this.db, this.options, () => {
      const { changes } = this.s.deleteHolder.run({ key, token, now: this.now() });
      if (changes !== 1) throw notOwner(key);
    });
    // A waiter of this process takes the slot at once; only without one are other processes
    // told (best effort, never delaying or failing the release: their poll is the net). This keeps
    // the file write off the in-process handoff, the common case.
    const local = this.released.listenerCount(key) > 0;
    this.released.emit(key);
    if (!local && this.wakeFile) void writeFile(this.wakeFile, String(Date.now())).catch(() => undefined);
  }

  async listKeys({ limit, after }: { limit: number; after?: string }): Promise<Page<string>> {
    const rows = await read(this.options, () => this.s.listKeys.all(after ?? '', limit + 1) as { key: string }[]);
    const items = rows.slice(0, limit).map((r) => r.key);
    return { items, nextCursor: rows.length > limit ? items.at(-1)! : null };
  }

  async inspect(key: string): Promise<Omit<LockInfo, 'waiters'>> {
    return read(this.options, () =>
      this.db
        .transaction(() => {
          const rows = this.s.liveHolders.all(key, this.now()) as {
            token: string;
            fence: number;
            expires_ms: number;
          }[];
          const last = this.s.lastFence.get(key) as { fence: number } | undefined;
          return {
            key,
            holders: rows.map((r) => ({
              tokenPrefix: r.token.slice(0, 8),
              fence: r.fence,
              expiresAt: new Date(r.expires_ms).toISOString(),
            })),
            lastFence: last?.fence ?? 0,
          };
        })
        .deferred(),
    );
  }

  onRelease(key: string, listener: () => void): () => void {
    this.watchWakeFile();
    this.released.on(key, listener);
    return () => this.released.off(key, listener);
  }

  /** Stops watching the wake file (the backend's close). */
  close(): void {
    this.closed = true;
    this.watcher?.close();
    this.watcher = null;
  }

  /** Started with the first waiter of this process, kept until close (unref'd: never holds the process open). */
  private watchWakeFile(): void {
    if (this.watcher || !this.wakeFile || this.closed) return;
    try {
      writeFileSync(this.wakeFile, '', { flag: 'a' });
      this.watcher = watch(this.wakeFile, { persistent: false }, () => {
        // A release somewhere: every waiter of this process tries again (only the free key's win).
        for (const key of this.released.eventNames()) this.released.emit(key);
      });
      this.watcher.on('error', () => {
        this.watcher?.close();
        this.watcher = null;
      });
    } catch {
      this.watcher = null; // no change notification here: the safety-net poll remains
    }
  }

  /**
   * Inside an acquire's transaction, judged by `now`: records `token` as a holder with the key's
   * next fence and answers the grant, its validity measured after the write on the same clock, so
   * it is never stale on return.
   */
  private grantLocked(key: string, token: string, ttlMs: number, now: number): LeaseGrant {
    const { fence } = this.s.nextFence.get(key) as { fence: number };
    const expiresMs = now + ttlMs;
    this.s.insertHolder.run({ key, token, fence, expiresMs });
    return grant(token, fence, expiresMs, this.now());
  }

  private now(): number {
    return (this.s.nowMs.get() as { now: number }).now;
  }
}

function grant(token: string, fence: number, expiresMs: number, nowMs: number): LeaseGrant {
  return {
    token,
    fence,
    expiresAt: new Date(expiresMs).toISOString(),
    validForMs: Math.max(1, Math.floor(expiresMs - nowMs)),
  };
}
