/**
 * An import that grows the codes table by 10 % or more analyzes it at once (import-codes.ts,
 * refreshStatistics): claims run on generic plans cached per connection, and a plan made while the
 * table was small stays until its statistics change (measured: 16.6 ms per claim after a 300,000-code
 * import, 0.63 ms once analyzed). Checked through PostgreSQL's own count of analyzes of the table.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import pg from 'pg';
import { requirePostgres, openTempPg, TEST_PG } from '../support/postgres.js';
import type { Dibs } from '../../src/index.js';

const skip = await requirePostgres();

describe('postgres: imports refresh the planner statistics of a grown codes table', { skip }, () => {
  let dibs: Dibs;
  let schema: string;
  let cleanup: () => Promise<void>;
  const client = new pg.Client({ connectionString: TEST_PG });
  const analyzes = async () =>
    Number(
      (
        await client.query<{ n: string }>(
          `SELECT analyze_count AS n FROM pg_stat_user_tables WHERE schemaname = $1 AND relname = 'codes'`,
          [schema],
        )
      ).rows[0]?.n ?? 0,
    );
  // The statistics collector reports with a short delay: wait until the count has settled.
  const settledAnalyzes = async (atLeast: number) => {
    for (let i = 0; i < 100; i++) {
      const n = await analyzes();
      if (n >= atLeast) return n;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return analyzes();
  };
  before(async () => {
    ({ dibs, schema, cleanup } = await openTempPg());
    await client.connect();
  });
  after(async () => {
    await client.end();
    await cleanup?.();
  });

  it('a big import analyzes the table; a small refill of a big table does not', async () => {
    await dibs.pools.create({ name: 'big' });
    assert.equal(
      (
        await dibs.pools.importCodes(
          'big',
          Array.from({ length: 5000 }, (_, i) => `B-${i}`),
        )
      ).imported,
      5000,
    );
    const afterBig = await settledAnalyzes(1);
    assert.ok(afterBig >= 1, 'the 5,000-code import analyzed the table');
    assert.equal(
      (
        await dibs.pools.importCodes(
          'big',
          Array.from({ length: 100 }, (_, i) => `R-${i}`),
        )
      ).imported,
      100,
    );
    await new Promise((resolve) => setTimeout(resolve, 700)); // let a (wrong) analyze be counted
    assert.equal(await analyzes(), afterBig, 'a 2 % refill leaves the statistics to autovacuum');
  });
});
