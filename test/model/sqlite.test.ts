/** The pool model check (pool-model.ts) on SQLite: every answer and the final state equal the model's. */
import { describe, it } from 'node:test';
import { sqliteForSuite } from '../support/sqlite.js';
import { checkPools } from './pool-model.js';

describe('sqlite: coupon pools against the reference model', () => {
  const env = sqliteForSuite();
  it('every answer and the final state match the model (seeded, shrinking)', async () => {
    await checkPools(env.dibs, 'sqlite', { runs: 100, maxCommands: 30 });
  });
});
