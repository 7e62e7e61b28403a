/** The pool model check (pool-model.ts) on PostgreSQL, grouped claims (the default path): every answer and the final state equal the model's. */
import { describe, it } from 'node:test';
import { pgForSuite, requirePostgres } from '../support/postgres.js';
import { checkPools } from './pool-model.js';

const skip = await requirePostgres();

describe('postgres: coupon pools against the reference model', { skip }, () => {
  const env = pgForSuite();
  it('every answer and the final state match the model (seeded, shrinking)', async () => {
    await checkPools(env.dibs, 'pg', { runs: 25, maxCommands: 30 });
  });
});
