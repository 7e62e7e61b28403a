/**
 * Lock keys and counters listed on Redis by SCAN (scan-names.ts): page by page over hundreds of
 * names, odd characters, bookkeeping keys and another prefix's keys that share this prefix's start —
 * on the shared single node and on a 3-master Cluster started by the test (every master scanned).
 */
import { after, before, describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { assertListingWalk } from '../support/listing-walk.js';
import {
  deletePrefix,
  redisServerInstalled,
  sharedRedisAvailable,
  SHARED_REDIS,
  startCluster,
  testPrefix,
  type OwnedCluster,
} from '../support/redis.js';

describe('redis single node: listing locks and counters', { skip: !(await sharedRedisAvailable()) }, () => {
  it('walks 1,200 lock keys and 1,500 counters in pages of 97, next to another prefix', {
    timeout: 120_000,
  }, async () => {
    const prefix = testPrefix();
    // a neighbour prefix that extends ours ({px:lock:…}): its keys are never listed
    const neighbour = await openDibs(`${SHARED_REDIS}?prefix=${prefix}x`);
    const dibs = await openDibs(`${SHARED_REDIS}?prefix=${prefix}`);
    try {
      await neighbour.locks.release(await neighbour.locks.acquire('zz-neighbour', { ttlMs: 10_000 }));
      await neighbour.counters.incr('zz-neighbour', 1);
      console.log('pages', await assertListingWalk(dibs, { locks: 1200, counters: 1500, page: 97 }));
    } finally {
      await dibs.close();
      await neighbour.close();
      await deletePrefix(SHARED_REDIS, prefix);
      await deletePrefix(SHARED_REDIS, `${prefix}x`);
    }
  });
});

describe('redis cluster: listing locks and counters', { skip: !redisServerInstalled() }, () => {
  let cluster: OwnedCluster | undefined;
  before(async () => {
    cluster = await startCluster();
  });
  after(async () => {
    await cluster?.stop();
  });
  it('walks the names of every master in one order', { timeout: 120_000 }, async () => {
    const dibs = await openDibs(`${cluster!.url}?prefix=${testPrefix()}`);
    try {
      console.log('pages', await assertListingWalk(dibs, { locks: 300, counters: 300, page: 41 }));
    } finally {
      await dibs.close();
    }
  });
});
