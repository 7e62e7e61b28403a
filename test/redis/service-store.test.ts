import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { buildServer } from '../../src/service/app.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { serviceStoreConformance } from '../conformance/service-store.js';
import { deletePrefix, redisServerInstalled, sharedRedisAvailable, SHARED_REDIS, startCluster, testPrefix, type OwnedCluster } from '../support/redis.js';

const single = await sharedRedisAvailable();
describe('redis single node', { skip: !single }, () => {
  serviceStoreConformance('redis', async () => {
    const prefix = testPrefix();
    const dibs = await openDibs(`${SHARED_REDIS}?prefix=${prefix}`);
    return {
      dibs,
      cleanup: async () => {
        await dibs.close();
        await deletePrefix(SHARED_REDIS, prefix);
      },
    };
  });
});

const installed = redisServerInstalled();
describe('redis cluster (3 masters, started by the test)', { skip: !installed }, () => {
  let cluster: OwnedCluster;
  before(async () => {
    cluster = await startCluster();
  });
  after(async () => {
    await cluster?.stop();
  });
  serviceStoreConformance('redis cluster', async () => {
    const dibs = await openDibs(`${cluster.url}?prefix=${testPrefix()}`);
    return { dibs, cleanup: () => dibs.close() };
  });

  it('rate-limits per key through the cluster (the plugin\'s Redis store on a Cluster client)', async () => {
    const dibs = await openDibs(`${cluster.url}?prefix=${testPrefix()}`);
    const app = buildServer({ dibs, rateLimit: { max: 3, timeWindowMs: 60_000 } });
    try {
      const { key } = await createApiKey(dibs.backend.service!, { name: 'c', scopes: ['pools:read'] });
      const statuses = [];
      for (let i = 0; i < 4; i++) statuses.push((await app.inject({ method: 'GET', url: '/v1/pools', headers: { authorization: `Bearer ${key}` } })).statusCode);
      assert.deepEqual(statuses, [200, 200, 200, 429]);
    } finally {
      await app.close();
      await dibs.close();
    }
  });
});
