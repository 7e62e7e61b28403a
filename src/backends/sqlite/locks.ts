/**
 * SQLite leases/semaphores: each operation is one BEGIN IMMEDIATE transaction that reads the
 * clock, sweeps lapsed holders, counts and grants — so two processes can never both get the
 * last slot. Release wake-ups reach waiters of THIS process only (an EventEmitter per key);
 * waiters in other processes notice through the facade's bounded safety-net poll.
 */
import { EventEmitter } from 'node:events';
import { randomBytes } from 'node:crypto';
import type { LockBackend } from '../../core/locks/backend.js';
import { leaseLost, notOwner } from '../../core/locks/errors.js';
import type { LeaseGrant, LockInfo } from '../../core/locks/types.js';
import { loadQueries } from '../shared/sql-files.js';
import { prepareAll, read, write, type Db, type SqliteOptions } from './database.js';

const Q = loadQueries(new URL('./locks.sql', import.meta.url), [
  'nowMs', 'sweep', 'holderCount', 'nextFence', 'insertHolder', 'extendHolder', 'deleteHolder', 'liveHolders', 'lastFence',
]);

export class SqliteLocks implements LockBackend {
  private readonly s;
  private readonly released = new EventEmitter().setMaxListeners(0);

  constructor(private readonly db: Db, private readonly options: SqliteOptions) {
    this.s = prepareAll(db, Q);
  }

  async tryAcquire(key: string, limit: number, ttlMs: number): Promise<LeaseGrant | null> {
    const token = randomBytes(16).toString('base64url');
    return write(this.db, this.options, () => {
      const now = this.now();
      this.s.sweep.run(key, now);
      const { n } = this.s.holderCount.get(key) as { n: number };
      if (n >= limit) return null;
      const { fence } = this.s.nextFence.get(key) as { fence: number };
      const expiresMs = now + ttlMs;
      this.s.insertHolder.run({ key, token, fence, expiresMs });
      // validForMs measured after the write, on the same clock, so it is never stale on return.
      return grant(token, fence, expiresMs, this.now());
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
    this.released.emit(key);
  }

  async inspect(key: string): Promise<Omit<LockInfo, 'waiters'>> {
    return read(this.options, () => this.db.transaction(() => {
      const rows = this.s.liveHolders.all(key, this.now()) as { token: string; fence: number; expires_ms: number }[];
      const last = this.s.lastFence.get(key) as { fence: number } | undefined;
      return {
        key,
        holders: rows.map((r) => ({ tokenPrefix: r.token.slice(0, 8), fence: r.fence, expiresAt: new Date(r.expires_ms).toISOString() })),
        lastFence: last?.fence ?? 0,
      };
    }).deferred());
  }

  onRelease(key: string, listener: () => void): () => void {
    this.released.on(key, listener);
    return () => this.released.off(key, listener);
  }

  private now(): number {
    return (this.s.nowMs.get() as { now: number }).now;
  }
}

function grant(token: string, fence: number, expiresMs: number, nowMs: number): LeaseGrant {
  return { token, fence, expiresAt: new Date(expiresMs).toISOString(), validForMs: Math.max(1, Math.floor(expiresMs - nowMs)) };
}
