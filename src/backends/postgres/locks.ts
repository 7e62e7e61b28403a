/**
 * PostgreSQL leases/semaphores: rows in lock_holders with an owner token, expiry and fence by
 * the server's clock; acquire and release are one function call each (functions/lock_acquire.sql, lock_release.sql),
 * renew one UPDATE that only touches a live row of the same token. A release NOTIFYs in its own
 * transaction; the ReleaseListener wakes this process' waiters of that key.
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import type { LockBackend } from '../../core/locks/backend.js';
import { leaseLost, notOwner } from '../../core/locks/errors.js';
import type { LeaseGrant, LockInfo } from '../../core/locks/types.js';
import type { Page } from '../../core/types.js';
import { loadQueries } from '../shared/sql-files.js';
import { query, queryPrepared } from './connection.js';
import type { ReleaseListener } from './listener.js';

const Q = loadQueries(new URL('./locks.sql', import.meta.url), [
  'acquire',
  'acquireFair',
  'renew',
  'release',
  'inspect',
  'listKeys',
]);

interface GrantRow {
  fence: string;
  expires_at: Date;
  valid_ms: number;
}

export class PgLocks implements LockBackend {
  constructor(
    private readonly pool: pg.Pool,
    private readonly listener: ReleaseListener,
  ) {}

  async tryAcquire(key: string, limit: number, ttlMs: number): Promise<LeaseGrant | null> {
    const token = randomBytes(16).toString('base64url');
    const { rows } = await queryPrepared<GrantRow>(this.pool, 'dibs_lock_acquire', Q.acquire, [
      key,
      token,
      limit,
      ttlMs,
    ]);
    return rows[0] ? grant(token, rows[0]) : null;
  }

  async tryAcquireFair(
    key: string,
    limit: number,
    ttlMs: number,
    queueKey: string,
    ticket: string | null,
  ): Promise<LeaseGrant | null> {
    const token = randomBytes(16).toString('base64url');
    const { rows } = await queryPrepared<GrantRow>(this.pool, 'dibs_lock_acquire_fair', Q.acquireFair, [
      key,
      token,
      limit,
      ttlMs,
      queueKey,
      ticket,
    ]);
    return rows[0] ? grant(token, rows[0]) : null;
  }

  async renew(key: string, token: string, ttlMs: number): Promise<LeaseGrant> {
    const { rows } = await queryPrepared<GrantRow>(this.pool, 'dibs_lock_renew', Q.renew, [key, token, ttlMs]);
    if (!rows[0]) throw leaseLost(key);
    return grant(token, rows[0]);
  }

  async release(key: string, token: string): Promise<void> {
    const { rows } = await queryPrepared<{ released: boolean }>(this.pool, 'dibs_lock_release', Q.release, [
      key,
      token,
      this.listener.channel,
    ]);
    if (!rows[0]?.released) throw notOwner(key);
  }

  async listKeys({ limit, after }: { limit: number; after?: string }): Promise<Page<string>> {
    const { rows } = await query<{ key: string }>(this.pool, Q.listKeys, [after ?? '', limit + 1]);
    const items = rows.slice(0, limit).map((r) => r.key);
    return { items, nextCursor: rows.length > limit ? items.at(-1)! : null };
  }

  async inspect(key: string): Promise<Omit<LockInfo, 'waiters'>> {
    const { rows } = await query<{
      holders: { token: string; fence: number; expires_at: string }[];
      last_fence: string;
    }>(this.pool, Q.inspect, [key]);
    const row = rows[0]!;
    return {
      key,
      holders: row.holders.map((h) => ({
        tokenPrefix: h.token.slice(0, 8),
        fence: Number(h.fence),
        expiresAt: new Date(h.expires_at).toISOString(),
      })),
      lastFence: Number(row.last_fence),
    };
  }

  onRelease(key: string, listener: () => void): () => void {
    return this.listener.on(key, listener);
  }
}

function grant(token: string, row: GrantRow): LeaseGrant {
  return {
    token,
    fence: Number(row.fence),
    expiresAt: row.expires_at.toISOString(),
    validForMs: Math.max(1, Math.floor(row.valid_ms)),
  };
}
