/**
 * Multi-process invariant tests on Redis, with the same harness as every other store: 4 OS
 * processes, 10,000 claimants (double clicks, retried keys) vs 5,000 codes — on the shared
 * single node and on a 3-master Cluster started by the test.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import {
  deletePrefix,
  redisServerInstalled,
  sharedRedisAvailable,
  SHARED_REDIS,
  startCluster,
  testPrefix,
  type OwnedCluster,
} from '../support/redis.js';
import { assertStormInvariants, runClaimStorm } from '../support/storm.js';

async function stormAndAudit(store: string, pool: string, perClaimantLimit: number): Promise<void> {
  const dibs = await openDibs(store);
  try {
    await dibs.pools.create({ name: pool, perClaimantLimit, lowStockThreshold: 100 });
    await dibs.pools.importCodes(
      pool,
      Array.from({ length: 5000 }, (_, i) => `CODE-${i}`),
    );
    const outcomes = await runClaimStorm({
      store,
      pool,
      processes: 4,
      claimants: perClaimantLimit === 1 ? 10_000 : 2_500,
      claimsPerClaimant: perClaimantLimit === 1 ? 1 : 3,
      concurrency: 16,
    });
    const summary = await assertStormInvariants(dibs, pool, outcomes, { codes: 5000, perClaimantLimit });
    assert.equal(summary.codesGiven, 5000);
    assert.equal((await dibs.pools.events({ pool })).filter((e) => e.type === 'pool.low_stock').length, 1);
  } finally {
    await dibs.close();
  }
}

const single = await sharedRedisAvailable();
describe('redis single node: 4 processes', { skip: !single }, () => {
  const prefix = testPrefix();
  after(() => deletePrefix(SHARED_REDIS, prefix));
  for (const limit of [1, 3]) {
    it(`10,000 claimants vs 5,000 codes, limit ${limit}`, () =>
      stormAndAudit(`${SHARED_REDIS}?prefix=${prefix}`, `storm-${limit}`, limit));
  }
});

const installed = redisServerInstalled();
describe('redis cluster: 4 processes', { skip: !installed }, () => {
  let cluster: OwnedCluster;
  before(async () => {
    cluster = await startCluster();
  });
  after(() => cluster?.stop());
  it('10,000 claimants vs 5,000 codes on 3 masters, pools spread over slots', async () => {
    const store = `${cluster.url}?prefix=${testPrefix()}`;
    await stormAndAudit(store, 'cluster-storm', 1);
    const dibs: Dibs = await openDibs(store);
    try {
      // Several pools land on different masters; listing and claiming work across them.
      for (const name of ['alpha', 'beta', 'gamma', 'delta']) {
        await dibs.pools.create({ name });
        await dibs.pools.importCodes(name, ['X']);
        assert.equal((await dibs.pools.claim(name, 'u')).code, 'X');
      }
      assert.equal((await dibs.pools.list()).items.length, 5);
    } finally {
      await dibs.close();
    }
  });
});
