/**
 * Cold starts on Redis (serverless instances open dibs per instance or per invocation): opening
 * holds one connection, the pub/sub connection of lock wake-ups comes only with the first lock
 * wait, and open → claim → contended lock → close in a loop leaves no connection behind. A
 * test-owned redis-server, so CLIENT LIST counts only this file's connections.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { openDibs, type Dibs } from '../../src/index.js';
import { startRedis, type OwnedRedis } from '../support/redis.js';

describe('redis cold start', () => {
  let redis: OwnedRedis;
  let watcher: Redis;
  /** Connections other than the watcher's own. */
  const connections = async () => ((await watcher.client('LIST')) as string).trim().split('\n').length - 1;

  before(async () => {
    redis = await startRedis();
    watcher = new Redis(redis.url);
    const dibs = await openDibs(redis.url);
    await dibs.pools.create({ name: 'cold', perClaimantLimit: 1000 });
    await dibs.pools.importCodes(
      'cold',
      Array.from({ length: 200 }, (_, i) => `C${i}`),
    );
    await dibs.close();
  });
  after(async () => {
    watcher?.disconnect();
    await redis?.stop();
  });

  /** Holds a lock and has a second acquire wait for it (the waiter subscribes), then hands over. */
  async function contendedLock(dibs: Dibs, key: string, during: () => Promise<void> = async () => {}): Promise<void> {
    const first = await dibs.locks.acquire(key, { ttlMs: 10_000 });
    const second = dibs.locks.acquire(key, { ttlMs: 10_000, waitMs: 10_000 });
    await sleep(50);
    await during();
    await dibs.locks.release(first);
    await dibs.locks.release(await second);
  }

  it('opening holds one connection; the pub/sub connection comes with the first lock wait', async () => {
    const dibs = await openDibs(redis.url);
    try {
      assert.equal(await connections(), 1, 'one connection after opening');
      await dibs.pools.claim('cold', 'first');
      assert.equal(await connections(), 1, 'a claim opens nothing more');
      await contendedLock(dibs, 'cold-start:probe', async () => {
        assert.equal(await connections(), 2, 'a waiting acquire subscribes on a second connection');
      });
    } finally {
      await dibs.close();
    }
    assert.equal(await connections(), 0, 'close ends both');
  });

  it('open → claim → contended lock → close per invocation, 20 times, leaves no connection behind', async () => {
    for (let i = 0; i < 20; i++) {
      const dibs = await openDibs(redis.url);
      try {
        await dibs.pools.claim('cold', `invocation-${i}`);
        await contendedLock(dibs, `cold-start:${i % 3}`);
      } finally {
        await dibs.close();
      }
    }
    // QUIT is answered before the server drops the connection: give it a moment.
    for (let tries = 0; tries < 20 && (await connections()) > 0; tries++) await sleep(50);
    assert.equal(await connections(), 0, 'every connection closed');
    const dibs = await openDibs(redis.url);
    try {
      assert.equal((await dibs.pools.stats('cold')).claimed, 21);
      assert.deepEqual(await dibs.pools.audit('cold'), []);
    } finally {
      await dibs.close();
    }
  });
});
