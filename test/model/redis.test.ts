/** The pool model check (pool-model.ts) on the shared Redis (own key prefix): the Lua steps answer as the model does. */
import { describe, it } from 'node:test';
import { redisForSuite, sharedRedisAvailable } from '../support/redis.js';
import { checkPools } from './pool-model.js';

const skip = !(await sharedRedisAvailable());

describe('redis: coupon pools against the reference model', { skip }, () => {
  const env = redisForSuite();
  it('every answer and the final state match the model (seeded, shrinking)', async () => {
    await checkPools(env.dibs, 'redis', { runs: 100, maxCommands: 30 });
  });
});
