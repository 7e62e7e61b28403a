/**
 * The multi-process cart storm on Redis (support/cart-storm-suite.ts): on the shared single node
 * (the three sales in different sale groups: one script reaches them all) and on a 3-master
 * Cluster started by the test (the sales' SKUs share a {tag}, so one slot; FAULTS_LONG=1 only).
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

// The Cluster runs the cart conformance suite by default (test/redis/sales.test.ts); its storm,
// with a cluster of its own to start, runs with FAULTS_LONG=1.
describe('redis cluster (3 masters, started by the test)', {
  skip: !redisServerInstalled() ? 'no redis-server' : process.env.FAULTS_LONG !== '1' ? 'FAULTS_LONG=1 runs it' : false,
}, () => {
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
