/**
 * Admin changes racing a claim / buy / reserve storm on Redis (I8; the suite is in
 * support/admin-storm-suite.ts): 4 processes with their own connections, on the shared single node.
 */
import { describe } from 'node:test';
import { adminStormSuite } from '../support/admin-storm-suite.js';
import { redisForSuite, sharedRedisAvailable } from '../support/redis.js';

describe('redis single node', { skip: !(await sharedRedisAvailable()) }, () => {
  adminStormSuite('redis', redisForSuite());
});
