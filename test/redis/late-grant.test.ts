/**
 * A store slower than a lease's TTL: Redis behind a relay that delays every byte by 120 ms each
 * way, so a grant's answer arrives ~240 ms after it was sent, past a 100 ms lease. The facade gives
 * such a grant back (nobody may count on a lease that has already run out) and says so: the
 * `lock_timeout` names the late grant instead of claiming the lock was not free, and the key is
 * free again for a caller the store answers in time.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { startDelayRelay, type DelayRelay } from '../support/delay-relay.js';
import { deletePrefix, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';

const available = await sharedRedisAvailable();

describe('redis: a grant that arrives after its lease ran out', { skip: !available }, () => {
  const prefix = testPrefix();
  let relay: DelayRelay;
  let slow: Dibs;
  let direct: Dibs;

  before(async () => {
    const { hostname, port } = new URL(SHARED_REDIS);
    relay = await startDelayRelay({ host: hostname, port: Number(port || 6379) }, 120);
    slow = await openDibs(`redis://127.0.0.1:${relay.port}/0?prefix=${prefix}`);
    direct = await openDibs(`${SHARED_REDIS}?prefix=${prefix}`);
  });

  after(async () => {
    await slow?.close().catch(() => {});
    await direct?.close().catch(() => {});
    await relay?.close();
    await deletePrefix(SHARED_REDIS, prefix);
  });

  it('is given back and answered as a late grant, not as a lock that was not free', async () => {
    await assert.rejects(
      slow.locks.acquire('late', { ttlMs: 100, waitMs: 0 }),
      (error: Error & { code?: string; details?: Record<string, unknown> }) => {
        assert.equal(error.code, 'lock_timeout');
        assert.equal(error.details?.grantTooLate, true, error.message);
        assert.match(error.message, /granted, but the store answered after the lease's 100 ms TTL/);
        return true;
      },
    );
    // given back (or lapsed): a caller the store answers in time gets the key at once
    const lease = await direct.locks.acquire('late', { ttlMs: 5000, waitMs: 2000 });
    await direct.locks.release(lease);
    // a key that is really held still answers "not free"
    const held = await direct.locks.acquire('held', { ttlMs: 30_000 });
    await assert.rejects(
      slow.locks.acquire('held', { ttlMs: 100, waitMs: 0 }),
      (error: Error & { code?: string; details?: Record<string, unknown> }) => {
        assert.equal(error.code, 'lock_timeout');
        assert.equal(error.details?.grantTooLate, undefined, error.message);
        assert.match(error.message, /was not free within 0 ms/);
        return true;
      },
    );
    await direct.locks.release(held);
  });
});
