/** The forecast suite on Redis: the shared single node and a test-owned 3-master Cluster. */
import { after, before, describe } from 'node:test';
import { forecastConformance } from '../conformance/forecast.js';
import {
  redisForSuite,
  redisServerInstalled,
  sharedRedisAvailable,
  startCluster,
  type OwnedCluster,
} from '../support/redis.js';

const single = await sharedRedisAvailable();
describe('redis single node', { skip: !single }, () => {
  forecastConformance('redis', redisForSuite());
});

const installed = redisServerInstalled();
describe('redis cluster (3 masters, started by the test)', { skip: !installed }, () => {
  let cluster: OwnedCluster | undefined;
  before(async () => {
    cluster = await startCluster();
  });
  after(async () => {
    await cluster?.stop();
  });
  forecastConformance(
    'redis cluster',
    redisForSuite(() => {
      if (!cluster) throw new Error('the cluster is started in before()');
      return cluster.url;
    }),
  );
});
