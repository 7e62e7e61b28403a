/** The pool model check (pool-model.ts) on PostgreSQL, grouped claims (the default path): every answer and the final state equal the model's. */
import { describe, it } from 'node:test';
import { pgForSuite, requirePostgres } from '../support/postgres.js';
import { checkPools } from './pool-model.js';
import { checkSales } from './sale-model.js';
import { FAST_EXPIRY } from './clock.js';

const skip = await requirePostgres();

describe('postgres: against the reference model', { skip }, () => {
  const env = pgForSuite();
  it('coupon pools: every answer and the final state match the model (seeded, shrinking)', async () => {
    await checkPools(env.dibs, 'pg', { runs: 15, maxCommands: 30 });
  });
  it('flash sales: every answer and the final state match the model (seeded, shrinking)', async () => {
    await checkSales(env.dibs, 'pg', { runs: 12, maxCommands: 25 });
  });
  it("expiry by the store's clock: short holds and reservations end, units come back (seeded, shrinking)", async () => {
    await Promise.all([
      checkPools(env.dibs, 'pg', { runs: 8, maxCommands: 20, expiry: FAST_EXPIRY }),
      checkSales(env.dibs, 'pg', { runs: 8, maxCommands: 20, expiry: FAST_EXPIRY }),
    ]);
  });
});
