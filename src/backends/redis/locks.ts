/**
 * Redis leases/semaphores: each operation is one Lua script on the lock's slot (scripts/lock_*.lua)
 * with the server's TIME; a release publishes the key, and the ReleaseSubscriber wakes this
 * process' waiters of that key.
 */
import { randomBytes } from 'node:crypto';
import type { LockBackend } from '../../core/locks/backend.js';
import { leaseLost, notOwner } from '../../core/locks/errors.js';
import type { LeaseGrant, LockInfo } from '../../core/locks/types.js';
import type { Page } from '../../core/types.js';
import { lockKeys } from './keys.js';
import { REPLAY_MS, replayKey, requestId } from './resend.js';
import { globLiteral, scanNames } from './scan-names.js';
import { runScript, type RedisClient } from './scripts.js';
import type { ReleaseSubscriber } from './subscriber.js';

export class RedisLocks implements LockBackend {
  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly subscriber: ReleaseSubscriber,
  ) {}

  /**
   * Every lock key ever granted: each keeps its fence key `{prefix:lock:KEY}:fence` forever. A
   * companion key of the facade (`KEY\u001fPART`) has `{prefix:lock:KEY}:PART:fence` instead, so
   * only names whose fence key ends in `}:fence` are user keys. One SCAN of every master per page
   * (scan-names.ts).
   */
  listKeys(options: { limit: number; after?: string }): Promise<Page<string>> {
    const start = `{${this.prefix}:lock:`;
    const end = '}:fence';
    return scanNames(
      this.client,
      `${globLiteral(start)}*${globLiteral(end)}`,
      (key) => (key.startsWith(start) && key.endsWith(end) ? key.slice(start.length, -end.length) : null),
      options,
    );
  }

  async tryAcquire(key: string, limit: number, ttlMs: number): Promise<LeaseGrant | null> {
    const k = lockKeys(this.prefix, key);
    const token = randomBytes(16).toString('base64url');
    const reply = (await runScript(
      this.client,
      'lock_acquire',
      [k.holders, k.fence, k.tokens],
      [token, limit, ttlMs],
    )) as number[];
    return reply[0] === 0 ? null : grant(token, reply);
  }

  async tryAcquireFair(
    key: string,
    limit: number,
    ttlMs: number,
    queueKey: string,
    ticket: string | null,
  ): Promise<LeaseGrant | null> {
    const k = lockKeys(this.prefix, key);
    const q = lockKeys(this.prefix, queueKey);
    const token = randomBytes(16).toString('base64url');
    const reply = (await runScript(
      this.client,
      'lock_acquire_fair',
      [k.holders, k.fence, k.tokens, q.holders, q.tokens],
      [token, limit, ttlMs, ticket ?? ''],
    )) as number[];
    return reply[0] === 0 ? null : grant(token, reply);
  }

  async renew(key: string, token: string, ttlMs: number): Promise<LeaseGrant> {
    const k = lockKeys(this.prefix, key);
    const reply = (await runScript(this.client, 'lock_renew', [k.holders, k.tokens], [token, ttlMs])) as
      | number[]
      | null;
    if (!reply) throw leaseLost(key);
    return grant(token, reply);
  }

  async release(key: string, token: string): Promise<void> {
    const k = lockKeys(this.prefix, key);
    const reply = await runScript(
      this.client,
      'lock_release',
      [k.holders, k.tokens, replayKey(k.holders, requestId())],
      [token, this.subscriber.channel, key, REPLAY_MS],
    );
    if (reply !== 1) throw notOwner(key);
  }

  async inspect(key: string): Promise<Omit<LockInfo, 'waiters'>> {
    const k = lockKeys(this.prefix, key);
    const reply = (await runScript(this.client, 'lock_inspect', [k.holders, k.fence, k.tokens], [])) as (
      | string
      | number
    )[];
    const holders = [];
    for (let i = 1; i < reply.length; i += 3) {
      holders.push({
        tokenPrefix: String(reply[i]).slice(0, 8),
        fence: Number(reply[i + 1]),
        expiresAt: new Date(Number(reply[i + 2])).toISOString(),
      });
    }
    holders.sort((a, b) => a.fence - b.fence);
    return { key, holders, lastFence: Number(reply[0]) };
  }

  onRelease(key: string, listener: () => void): () => void {
    return this.subscriber.on(key, listener);
  }
}

function grant(token: string, [fence, expiresMs, nowMs]: number[]): LeaseGrant {
  return {
    token,
    fence: Number(fence),
    expiresAt: new Date(Number(expiresMs)).toISOString(),
    validForMs: Math.max(1, Number(expiresMs) - Number(nowMs)),
  };
}
