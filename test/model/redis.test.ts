/** The pool model check (pool-model.ts) on the shared Redis (own key prefix): the Lua steps answer as the model does. */
import { describe, it } from 'node:test';
import { redisForSuite, sharedRedisAvailable } from '../support/redis.js';
import { checkPools } from './pool-model.js';
import { checkSales } from './sale-model.js';
import { FAST_EXPIRY } from './clock.js';

const skip = !(await sharedRedisAvailable());

describe('redis: against the reference model', { skip }, () => {
  const env = redisForSuite();
  it('coupon pools: every answer and the final state match the model (seeded, shrinking)', async () => {
    await checkPools(env.dibs, 'redis', { runs: 80, maxCommands: 30 });
  });
  it('flash sales: every answer and the final state match the model (seeded, shrinking)', async () => {
    await checkSales(env.dibs, 'redis', { runs: 50, maxCommands: 25 });
  });
  it("expiry by the store's clock: short holds and reservations end, units come back (seeded, shrinking)", async () => {
    await Promise.all([
      checkPools(env.dibs, 'redis', { runs: 15, maxCommands: 20, expiry: FAST_EXPIRY }),
      checkSales(env.dibs, 'redis', { runs: 15, maxCommands: 20, expiry: FAST_EXPIRY }),
    ]);
  });
});
