/**
 * The multi-process cart storm on Redis (support/cart-storm-suite.ts): on the shared single node
 * (the three sales in different sale groups: one script reaches them all) and on a 3-master
 * Cluster started by the test (the sales' SKUs share a {tag}, so one slot).
 */
import { after, before, describe } from 'node:test';
import { cartStormSuite } from '../support/cart-storm-suite.js';
import {
  redisForSuite,
  redisServerInstalled,
  sharedRedisAvailable,
  startCluster,
  type OwnedCluster,
} from '../support/redis.js';

const single = await sharedRedisAvailable();
describe('redis single node', { skip: !single }, () => {
  cartStormSuite('redis', redisForSuite());
});

describe('redis cluster (3 masters, started by the test)', { skip: !redisServerInstalled() }, () => {
  let cluster: OwnedCluster | undefined;
  before(async () => {
    cluster = await startCluster();
  });
  after(async () => {
    await cluster?.stop();
  });
  cartStormSuite(
    'redis cluster',
    redisForSuite(() => {
      if (!cluster) throw new Error('the cluster is started in before()');
      return cluster.url;
    }),
    { skuTag: '{storm}' },
  );
});
