/**
 * Multi-process flash-sale storms and raced sale jobs on Redis (the suites are in
 * support/sale-storm-suite.ts and support/job-race.ts): 4 processes with their own connections,
 * on the shared single node and on a 3-master Cluster started by the test.
 */
import { after, before, describe } from 'node:test';
import { jobRaceSuite } from '../support/job-race.js';
import {
  redisForSuite,
  redisServerInstalled,
  sharedRedisAvailable,
  startCluster,
  type OwnedCluster,
} from '../support/redis.js';
import { saleStormSuite } from '../support/sale-storm-suite.js';

const single = await sharedRedisAvailable();
describe('redis single node', { skip: !single }, () => {
  saleStormSuite('redis', redisForSuite());
  jobRaceSuite('redis', redisForSuite());
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
  const url = () => {
    if (!cluster) throw new Error('the cluster is started in before()');
    return cluster.url;
  };
  saleStormSuite('redis cluster', redisForSuite(url));
  jobRaceSuite('redis cluster', redisForSuite(url));
});
