/**
 * The PostgreSQL store through a test-owned PgBouncer in transaction-pooling mode
 * (`?pooler=transaction`): the pool, sale and lock conformance suites unchanged, lock wake-ups by
 * polling and through a direct LISTEN connection (`listen=`), and concurrent first opens migrating
 * a fresh schema exactly once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { lockConformance } from '../conformance/locks.js';
import { poolConformance } from '../conformance/pools.js';
import { saleConformance } from '../conformance/sales.js';
import pg from 'pg';
import { openDibs } from '../../src/index.js';
import { openTempPgThrough, requirePgBouncer, startPgBouncer, type PgBouncer } from '../support/pgbouncer.js';
import { adminQuery, requirePostgres, tempPgStore, TEST_PG } from '../support/postgres.js';
import { loadFunctions } from '../../src/backends/postgres/functions.js';
import { loadMigrations } from '../../src/backends/shared/sql-files.js';

const MIGRATIONS = loadMigrations(new URL('../../src/backends/postgres/migrations/', import.meta.url)).length;

const skip = (await requirePostgres()) || requirePgBouncer();

if (skip) {
  it('postgres through pgbouncer', { skip }, () => {});
} else {
  let bouncer: PgBouncer;
  // One bouncer for the file, started by the first suite that needs it.
  let starting: Promise<PgBouncer> | undefined;
  const started = () => (starting ??= startPgBouncer().then((b) => (bouncer = b)));
  const through =
    (params: Record<string, string> = {}) =>
    async () =>
      openTempPgThrough(await started(), params);

  poolConformance('postgres via pgbouncer (transaction mode)', through());
  saleConformance('postgres via pgbouncer (transaction mode)', through());
  lockConformance('postgres via pgbouncer (transaction mode, polling wake-ups)', through());
  lockConformance(
    'postgres via pgbouncer (transaction mode, LISTEN on a direct connection)',
    through({ listen: TEST_PG }),
  );

  describe('postgres via pgbouncer: opening', () => {
    before(started);
    after(async () => {
      await bouncer?.stop();
    });

    it('a URL without pooler=transaction is refused by PgBouncer (the startup options), typed', async () => {
      const temp = tempPgStore();
      await assert.rejects(openDibs(bouncer.url({ schema: temp.schema })), (e: Error & { code?: string }) =>
        /unsupported startup parameter: options/.test(e.message),
      );
    });

    it("every statement and transaction runs with dibs' settings (SET LOCAL), and statement_timeout cancels", async () => {
      const env = await openTempPgThrough(bouncer, {
        statementTimeoutMs: '700',
        lockTimeoutMs: '600',
        idleInTransactionTimeoutMs: '500',
        queryTimeoutMs: '5000',
      });
      try {
        const pool = (env.dibs.backend as unknown as { pool: pg.Pool }).pool;
        const settings = `SELECT current_setting('search_path') AS sp, current_setting('statement_timeout') AS st, current_setting('lock_timeout') AS lt, current_setting('idle_in_transaction_session_timeout') AS it`;
        const expected = { sp: env.schema, st: '700ms', lt: '600ms', it: '500ms' };
        // Many statements at once: they land on several of PgBouncer's server connections.
        const lone = await Promise.all(Array.from({ length: 20 }, () => pool.query(settings)));
        for (const r of lone) assert.deepEqual(r.rows[0], expected);
        const client = await pool.connect();
        try {
          await client.query('BEGIN');
          assert.deepEqual((await client.query(settings)).rows[0], expected);
          await client.query('COMMIT');
        } finally {
          client.release();
        }
        await assert.rejects(pool.query('SELECT pg_sleep(2)'), (e: Error & { code?: string }) => e.code === '57014');
        // Nothing leaks onto PgBouncer's server connections: another client of the bouncer, on
        // the connections dibs just used, sees the server's defaults.
        const others = await Promise.all(
          Array.from({ length: 10 }, async () => {
            const other = new pg.Client({ connectionString: bouncer.url() });
            await other.connect();
            try {
              return (await other.query<{ sp: string; st: string }>(settings)).rows[0]!;
            } finally {
              await other.end();
            }
          }),
        );
        for (const r of others) {
          assert.equal(r.st, '0', 'statement_timeout leaked to another client');
          assert.notEqual(r.sp, env.schema, 'search_path leaked to another client');
        }
      } finally {
        await env.cleanup();
      }
    });

    it('eight concurrent first opens migrate a fresh schema exactly once (5 rounds)', async () => {
      for (let round = 0; round < 5; round++) {
        const temp = tempPgStore();
        const store = bouncer.url({ schema: temp.schema, pooler: 'transaction', poolSize: '2' });
        try {
          const opened = await Promise.all(Array.from({ length: 8 }, () => openDibs(store)));
          const rows = await adminQuery<{ id: number; n: number }>(
            `SELECT id, count(*)::int AS n FROM "${temp.schema}".migrations GROUP BY id ORDER BY id`,
          );
          assert.equal(rows.length, MIGRATIONS, 'every migration');
          assert.ok(rows.every((r) => r.n === 1));
          const functions = await adminQuery<{ n: number }>(
            `SELECT count(*)::int AS n FROM "${temp.schema}".function_versions`,
          );
          assert.equal(functions[0]!.n, loadFunctions().length, 'every server-side function, once');
          await opened[0]!.pools.create({ name: 'p' });
          assert.equal((await opened[7]!.pools.get('p')).name, 'p');
          await Promise.all(opened.map((d) => d.close()));
        } finally {
          await temp.drop();
        }
      }
    });
  });
}
