/** The model checks (pool-model.ts, sale-model.ts) on SQLite: every answer and the final state equal the model's. */
import { describe, it } from 'node:test';
import { sqliteForSuite } from '../support/sqlite.js';
import { checkPools } from './pool-model.js';
import { checkSales } from './sale-model.js';
import { FAST_EXPIRY } from './clock.js';

describe('sqlite: against the reference model', () => {
  const env = sqliteForSuite();
  it('coupon pools: every answer and the final state match the model (seeded, shrinking)', async () => {
    await checkPools(env.dibs, 'sqlite', { runs: 80, maxCommands: 30 });
  });
  it('flash sales: every answer and the final state match the model (seeded, shrinking)', async () => {
    await checkSales(env.dibs, 'sqlite', { runs: 50, maxCommands: 25 });
  });
  it("expiry by the store's clock: short holds and reservations end, units come back (seeded, shrinking)", async () => {
    await Promise.all([
      checkPools(env.dibs, 'sqlite', { runs: 15, maxCommands: 20, expiry: FAST_EXPIRY }),
      checkSales(env.dibs, 'sqlite', { runs: 15, maxCommands: 20, expiry: FAST_EXPIRY }),
    ]);
  });
});
