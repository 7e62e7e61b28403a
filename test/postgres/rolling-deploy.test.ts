/**
 * A rolling deploy: a newer build migrates the schema while instances of this one keep serving.
 * Its migrations may add columns to tables and its function files may add result columns to
 * functions; every statement this instance had prepared as `SELECT *` over them then fails with
 * "cached plan must not change result type" on each of its connections (stale-plans.ts).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import pg from 'pg';
import {
  createPool,
  type PgOptions,
  prepared,
  queryPrepared,
  withTransaction,
} from '../../src/backends/postgres/connection.js';
import { openDibs, type Dibs } from '../../src/index.js';
import { pgForSuite, TEST_PG } from '../support/postgres.js';

/** What a newer build could do: one more column on the sale tables, one more result column on two functions. */
async function newerBuild(schema: string): Promise<void> {
  const raw = new pg.Client({ connectionString: TEST_PG });
  await raw.connect();
  try {
    await raw.query(`SET search_path = "${schema}"`);
    await raw.query('ALTER TABLE sale_orders ADD COLUMN newer_build_note text');
    await raw.query('ALTER TABLE sale_holds ADD COLUMN newer_build_note text');
    for (const name of ['sale_take', 'sale_confirm']) {
      const { rows } = await raw.query<{ args: string; result: string; n: number }>(
        `SELECT pg_get_function_arguments(p.oid) AS args, pg_get_function_result(p.oid) AS result, p.pronargs AS n
           FROM pg_proc p WHERE p.proname = $1 AND p.pronamespace = $2::regnamespace`,
        [name, schema],
      );
      const { args, result, n } = rows[0]!;
      assert.match(result, /^TABLE\(.*\)$/);
      const params = Array.from({ length: n }, (_, i) => `$${i + 1}`).join(', ');
      await raw.query(`ALTER FUNCTION ${name}(${args.replace(/ DEFAULT [^,]+/g, '')}) RENAME TO ${name}_older`);
      await raw.query(
        `CREATE FUNCTION ${name}(${args}) RETURNS ${result.slice(0, -1)}, newer_build_note text)
           LANGUAGE sql AS $$ SELECT *, NULL::text FROM ${name}_older(${params}) $$`,
      );
    }
  } finally {
    await raw.end();
  }
}

/** Every kind of sale step, several at once so that each connection prepares its statements. */
async function saleSteps(dibs: Dibs, sale: string, round: string): Promise<void> {
  await Promise.all(
    Array.from({ length: 4 }, async (_, i) => {
      const { order } = await dibs.sales.buy(sale, `${round}-buyer-${i}`, 1, { idempotencyKey: `${round}-${i}` });
      assert.equal(order.quantity, 1);
      // a retried request, answered from what the first stored
      const replay = await dibs.sales.buy(sale, `${round}-buyer-${i}`, 1, { idempotencyKey: `${round}-${i}` });
      assert.equal(replay.order.id, order.id);
      const { hold } = await dibs.sales.reserve(sale, `${round}-holder-${i}`, 1, 60_000);
      const confirmed = await dibs.sales.confirm(hold.id);
      assert.equal(confirmed.order.quantity, 1);
    }),
  );
}

for (const grouped of ['true', 'false']) {
  describe(`postgres (grouped=${grouped}): a newer build changes the schema under a running instance`, () => {
    const env = pgForSuite({ poolSize: '2', grouped });

    it('buys, reservations and confirmations keep answering, on connections that had prepared them', async () => {
      const { dibs, schema } = env;
      const sale = await dibs.sales.create({
        sku: 'ROLLING',
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap: 100,
        perCustomerLimit: 2,
      });
      await saleSteps(dibs, sale.id, 'before');
      await newerBuild(schema);
      await saleSteps(dibs, sale.id, 'after');
      await saleSteps(dibs, sale.id, 'again');
      const after = await dibs.sales.get(sale.id);
      assert.equal(after.stats.sold, 24);
      assert.deepEqual(await dibs.sales.audit(sale.id), []);
      // a fresh instance of this build on the newer schema too
      const fresh = await openDibs(env.store);
      try {
        await saleSteps(fresh, sale.id, 'fresh');
      } finally {
        await fresh.close();
      }
    });
  });
}

describe('postgres: a prepared statement made stale by another build', () => {
  const env = pgForSuite();

  it('runs again outside a transaction; inside one answers unavailable once, then runs again', async () => {
    const { schema } = env;
    const options = {
      schema,
      poolSize: 1,
      grouped: false,
      groupMax: 1,
      groupConcurrency: 1,
      connectTimeoutMs: 5000,
      queryTimeoutMs: 10_000,
      statementTimeoutMs: 5000,
      lockTimeoutMs: 5000,
      idleInTransactionTimeoutMs: 5000,
      pooler: null,
      listenUrl: null,
    } satisfies PgOptions;
    const pool = createPool(TEST_PG, options);
    const raw = new pg.Client({ connectionString: TEST_PG });
    await raw.connect();
    try {
      await raw.query(`SET search_path = "${schema}"; CREATE TABLE widened (a int); INSERT INTO widened VALUES (1)`);
      const select = () => queryPrepared<{ a: number }>(pool, 'dibs_test_widened', 'SELECT * FROM widened', []);
      const inTransaction = () =>
        withTransaction(
          pool,
          async (client) => (await client.query(prepared('dibs_test_widened', 'SELECT * FROM widened', []))).rows,
        );
      assert.deepEqual((await select()).rows, [{ a: 1 }]);
      await raw.query('ALTER TABLE widened ADD COLUMN b int');
      assert.deepEqual((await select()).rows, [{ a: 1, b: null }], 'outside a transaction: prepared again');
      await raw.query('ALTER TABLE widened ADD COLUMN c int');
      await assert.rejects(inTransaction(), { code: 'unavailable' }, 'inside one: its transaction is aborted');
      assert.deepEqual(await inTransaction(), [{ a: 1, b: null, c: null }], 'and the next one prepares it again');
    } finally {
      await raw.end();
      await pool.end();
    }
  });
});
