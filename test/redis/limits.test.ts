/**
 * Rate limits on Redis: the conformance suite unchanged on the shared single node and on a
 * 3-master Cluster started by the test, and the multi-process storm on both at once.
 */
import { it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { limitConformance } from '../conformance/limits.js';
import { assertLimitStorm } from '../support/limit-storm.js';
import { deletePrefix, onRedisStores, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';

const single = await sharedRedisAvailable();

/** The storm against one store URL; prints the summary. */
async function storm(label: string, store: string): Promise<void> {
  const dibs = await openDibs(store);
  try {
    console.log(`${label} limit storm`, JSON.stringify(await assertLimitStorm(dibs, store, { prefix: 'storm' })));
  } finally {
    await dibs.close();
  }
}

await onRedisStores(limitConformance, (url) => {
  // both storms at once: their worker processes start together (CI time), on separate stores
  it('storms of processes on a Cluster and on the single node: every window within its limit, every denial required', {
    timeout: 240_000, // a hang catcher: the workers' own bounds (limit-storm.ts) fire first
  }, async () => {
    const prefix = testPrefix();
    try {
      await Promise.all([
        storm('redis cluster', `${url()}?prefix=${testPrefix()}`),
        single ? storm('redis', `${SHARED_REDIS}?prefix=${prefix}`) : Promise.resolve(),
      ]);
    } finally {
      if (single) await deletePrefix(SHARED_REDIS, prefix);
    }
  });
});
