/** The fair-start storm (support/fair-start-storm.ts) on Redis: 4 processes, the shared single node. */
import { describe } from 'node:test';
import { fairStartStormSuite } from '../support/fair-start-storm.js';
import { redisForSuite, sharedRedisAvailable } from '../support/redis.js';

describe('redis single node', { skip: !(await sharedRedisAvailable()) }, () => {
  fairStartStormSuite('redis', redisForSuite());
});
