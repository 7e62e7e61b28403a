/**
 * Rate limits on Redis: the conformance suite unchanged on the shared single node and on a
 * 3-master Cluster started by the test, and the multi-process storm on each.
 */
import { it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { limitConformance } from '../conformance/limits.js';
import { assertLimitStorm } from '../support/limit-storm.js';
import { deletePrefix, onRedisStores, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';

const single = await sharedRedisAvailable();

await onRedisStores(limitConformance, (url) => {
  it('a storm of processes on a Cluster: every window within its limit, every denial required', { timeout: 120_000 }, async () => {
    const store = `${url()}?prefix=${testPrefix()}`;
    const dibs = await openDibs(store);
    try {
      console.log('redis cluster limit storm', JSON.stringify(await assertLimitStorm(dibs, store, { prefix: 'storm' })));
    } finally {
      await dibs.close();
    }
  });
});

it('redis single node: a storm of processes, every window within its limit, every denial required', { skip: !single, timeout: 120_000 }, async () => {
  const prefix = testPrefix();
  const store = `${SHARED_REDIS}?prefix=${prefix}`;
  const dibs = await openDibs(store);
  try {
    console.log('redis limit storm', JSON.stringify(await assertLimitStorm(dibs, store, { prefix: 'storm' })));
  } finally {
    await dibs.close();
    await deletePrefix(SHARED_REDIS, prefix);
  }
});
