import { after, before, describe } from 'node:test';
import { openDibs } from '../../src/index.js';
import { poolConformance } from '../conformance/pools.js';
import { deletePrefix, redisServerInstalled, sharedRedisAvailable, SHARED_REDIS, startCluster, testPrefix, type OwnedCluster } from '../support/redis.js';

const single = await sharedRedisAvailable();
describe('redis single node', { skip: !single }, () => {
  poolConformance('redis', async () => {
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
  poolConformance('redis cluster', async () => {
    const dibs = await openDibs(`${cluster.url}?prefix=${testPrefix()}`);
    return { dibs, cleanup: () => dibs.close() };
  });
});
