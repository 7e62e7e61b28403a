/** The waiting-room storm (support/room-storm.ts) on Redis: 4 processes, the shared single node. */
import { describe } from 'node:test';
import { redisForSuite, sharedRedisAvailable } from '../support/redis.js';
import { roomStormSuite } from '../support/room-storm.js';

describe('redis single node', { skip: !(await sharedRedisAvailable()) }, () => {
  roomStormSuite('redis', redisForSuite());
});
