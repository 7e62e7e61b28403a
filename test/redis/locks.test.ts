/**
 * Leases, semaphores and counters on Redis: the conformance suite unchanged on the shared single
 * node and on a 3-master Cluster started by the test, cross-instance pub/sub wake-ups on both,
 * the multi-process mutual-exclusion timeline, the lost-lease scenario, a counter storm, and lock
 * keys and counters listed page by page (SCAN of every master).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { lockConformance } from '../conformance/locks.js';
import { assertMutualExclusion, runCounterStorm, runLockStorm } from '../support/lock-storm.js';
import { assertLostLeaseIsFenced } from '../support/lost-lease.js';
import { assertFencesGrowAcrossLostHistory, assertFencesGrowPastTheClock } from '../support/fence-history.js';
import { Redis } from 'ioredis';
import { startFaultProxy } from '../support/fault-proxy.js';
import { assertBlockedLoopFiresSignalFirst, assertStalledReplyFiresSignalFirst } from '../support/lost-lease-timing.js';
import { lockKeys } from '../../src/backends/redis/keys.js';
import {
  deletePrefix,
  redisServerInstalled,
  sharedRedisAvailable,
  SHARED_REDIS,
  startCluster,
  startRedis,
  testPrefix,
  type OwnedCluster,
} from '../support/redis.js';
import { assertReleaseWakesOtherInstance } from '../support/wake.js';
import { assertWaitersSeenByOtherInstances } from '../support/lock-waiters.js';
import { assertTakenOverLeaseIsDead } from '../support/lock-edges.js';
import { assertListingWalk } from '../support/listing-walk.js';

const single = await sharedRedisAvailable();

/** A store URL on the shared server under a fresh prefix, removed by `cleanup`. */
function tempRedisStore() {
  const prefix = testPrefix();
  return { store: `${SHARED_REDIS}?prefix=${prefix}`, cleanup: () => deletePrefix(SHARED_REDIS, prefix) };
}

describe('redis single node: locks', { skip: !single }, () => {
  lockConformance('redis', async () => {
    const temp = tempRedisStore();
    const dibs = await openDibs(temp.store);
    return {
      dibs,
      cleanup: async () => {
        await dibs.close();
        await temp.cleanup();
      },
    };
  });

  it('a release in one instance wakes the waiters of another (pub/sub)', async () => {
    const temp = tempRedisStore();
    try {
      await assertReleaseWakesOtherInstance(temp.store);
    } finally {
      await temp.cleanup();
    }
  });

  it('waiters of other instances are counted by inspect (as `dibs locks inspect` shows them)', async () => {
    const temp = tempRedisStore();
    try {
      await assertWaitersSeenByOtherInstances(temp.store);
    } finally {
      await temp.cleanup();
    }
  });

  it('4 processes × 8 keys: per key no overlap, fences increase, different keys overlap', async () => {
    const temp = tempRedisStore();
    try {
      const keys = Array.from({ length: 8 }, (_, i) => `key-${i}`);
      const sections = await runLockStorm({ store: temp.store, processes: 4, keys, rounds: 16, holdMs: 10 });
      assert.equal(sections.length, 64);
      assertMutualExclusion(sections, keys);
    } finally {
      await temp.cleanup();
    }
  });

  it('a lease that lapsed and was taken over can be neither renewed nor released', async () => {
    const temp = tempRedisStore();
    try {
      await assertTakenOverLeaseIsDead(temp.store);
    } finally {
      await temp.cleanup();
    }
  });

  it('a holder paused past its TTL loses its lease and its late write is fenced off', async () => {
    const temp = tempRedisStore();
    try {
      await assertLostLeaseIsFenced(temp.store);
    } finally {
      await temp.cleanup();
    }
  });

  it('a last fence ahead of the clock (the clock stepped back) is continued, never restarted', async () => {
    const prefix = testPrefix();
    const raw = new Redis(SHARED_REDIS);
    try {
      await assertFencesGrowPastTheClock(`${SHARED_REDIS}?prefix=${prefix}`, async (key, fence) => {
        await raw.set(lockKeys(prefix, key).fence, String(fence));
      });
    } finally {
      raw.disconnect();
      await deletePrefix(SHARED_REDIS, prefix);
    }
  });

  it('runExclusive: an acquire reply stalled on the wire for 60% of the TTL, then renewals cut — the signal fires before the next holder gets the key', async () => {
    const temp = tempRedisStore();
    const proxy = await startFaultProxy({ host: '127.0.0.1', port: 6379 });
    try {
      const via = new URL(temp.store);
      via.port = String(proxy.port);
      await assertStalledReplyFiresSignalFirst(`${via}&commandTimeoutMs=10000`, temp.store, proxy);
    } finally {
      await proxy.close();
      await temp.cleanup();
    }
  });

  it('runExclusive: an event loop blocked for 60% of the TTL after the grant, then renewals cut — the signal fires before the next holder gets the key', async () => {
    const temp = tempRedisStore();
    const proxy = await startFaultProxy({ host: '127.0.0.1', port: 6379 });
    try {
      const via = new URL(temp.store);
      via.port = String(proxy.port);
      await assertStalledReplyFiresSignalFirst(`${via}&commandTimeoutMs=10000`, temp.store, proxy, 'event loop');
    } finally {
      await proxy.close();
      await temp.cleanup();
    }
  });

  it('runExclusive: an event loop blocked for 60% of the TTL after the grant, renewals working — the holder renews in time, never overlapping the next one', async () => {
    const temp = tempRedisStore();
    try {
      await assertBlockedLoopFiresSignalFirst(temp.store);
    } finally {
      await temp.cleanup();
    }
  });

  it('4 processes × 100 increments plus bursts: exact total, shard count grew', async () => {
    const temp = tempRedisStore();
    const dibs = await openDibs(temp.store);
    try {
      // Contention is made, not hoped for: bursts of 1,200 increments sent at once, until an answer
      // reports more than one shard (at most 10). A quiet machine's first burst reaches the server
      // within one server second, far above the 500 writes/s per shard that marks contention; a
      // loaded client can spread one burst over several seconds.
      const storm = runCounterStorm({ store: temp.store, processes: 4, counter: 'hits', rounds: 100 });
      let bursts = 0;
      let grew = false;
      while (!grew && bursts < 10) {
        const answers = await Promise.all(Array.from({ length: 1200 }, () => dibs.counters.incr('hits')));
        bursts++;
        grew = answers.some((answer) => answer.shards > 1);
      }
      await storm;
      const value = await dibs.counters.get('hits');
      assert.equal(value.value, 400 + 1200 * bursts);
      assert.ok(value.shards > 1, `shard count did not grow under contention (${value.shards}, ${bursts} bursts)`);
    } finally {
      await dibs.close();
      await temp.cleanup();
    }
  });

  it('lists 500 lock keys and 600 counters by SCAN, page by page, beside a prefix that extends ours', {
    timeout: 120_000,
  }, async () => {
    const prefix = testPrefix();
    const neighbour = await openDibs(`${SHARED_REDIS}?prefix=${prefix}x`); // its keys: {px:lock:…}, never listed
    const dibs = await openDibs(`${SHARED_REDIS}?prefix=${prefix}`);
    try {
      await neighbour.locks.release(await neighbour.locks.acquire('zz-neighbour', { ttlMs: 10_000 }));
      await neighbour.counters.incr('zz-neighbour', 1);
      console.log('pages', await assertListingWalk(dibs, { locks: 500, counters: 600, page: 37 }));
    } finally {
      await dibs.close();
      await neighbour.close();
      await deletePrefix(SHARED_REDIS, prefix);
      await deletePrefix(SHARED_REDIS, `${prefix}x`);
    }
  });
});

const installed = redisServerInstalled();
describe('redis without persistence, restarted empty between two holders', { skip: !installed }, () => {
  it("fences still grow: the next holder gets a higher fence and the old holder's write is refused", async () => {
    const server = await startRedis(['--appendonly', 'no']);
    try {
      await assertFencesGrowAcrossLostHistory(`${server.url}?prefix=${testPrefix()}`, {
        async forget() {
          await server.kill();
          await server.restart();
        },
      });
    } finally {
      await server.stop();
    }
  });
});

describe('redis cluster (3 masters, started by the test): locks', { skip: !installed }, () => {
  let cluster: OwnedCluster;
  before(async () => {
    cluster = await startCluster();
  });
  after(async () => {
    await cluster?.stop();
  });
  lockConformance('redis cluster', async () => {
    const dibs = await openDibs(`${cluster.url}?prefix=${testPrefix()}`);
    return { dibs, cleanup: () => dibs.close() };
  });

  it('lists lock keys and counters of every master in one order, page by page', { timeout: 120_000 }, async () => {
    const dibs = await openDibs(`${cluster.url}?prefix=${testPrefix()}`);
    try {
      console.log('pages', await assertListingWalk(dibs, { locks: 300, counters: 300, page: 41 }));
    } finally {
      await dibs.close();
    }
  });

  it('a release in one instance wakes the waiters of another (pub/sub across nodes)', async () => {
    await assertReleaseWakesOtherInstance(`${cluster.url}?prefix=${testPrefix()}`);
  });

  it('4 processes × 8 keys on the Cluster: per key no overlap, fences increase, different keys overlap', async () => {
    const keys = Array.from({ length: 8 }, (_, i) => `key-${i}`);
    const sections = await runLockStorm({
      store: `${cluster.url}?prefix=${testPrefix()}`,
      processes: 4,
      keys,
      rounds: 8,
      holdMs: 10,
    });
    assert.equal(sections.length, 32);
    assertMutualExclusion(sections, keys);
  });

  it("the master of a lock's slot restarted empty (no persistence): fences still grow, the old holder's write is refused", async () => {
    const prefix = testPrefix();
    await assertFencesGrowAcrossLostHistory(`${cluster.url}?prefix=${prefix}`, {
      async forget(keys) {
        const owners = new Set(keys.map((k) => cluster.ownerOf(lockKeys(prefix, k).fence)));
        for (const owner of owners) await owner.kill();
        await cluster.restartDead();
      },
    });
  });
});
