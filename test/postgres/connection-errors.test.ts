/**
 * A SQL error (a unique violation of a racing write, a deadlock victim, a lock timeout) leaves a
 * healthy connection: the backend's one-statement helpers keep it, so the next statement runs on
 * the same server backend with its plans, instead of paying a connect and a first plan of every
 * prepared statement (`pg`'s own `pool.query` closes the connection on ANY error). A connection
 * that is really gone is still thrown away.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { query, queryPrepared } from '../../src/backends/postgres/connection.js';
import { requirePostgres, TEST_PG } from '../support/postgres.js';

const skip = await requirePostgres();

describe('postgres: a SQL error keeps the connection', { skip }, () => {
  let pool: pg.Pool;
  let admin: pg.Client;
  before(async () => {
    pool = new pg.Pool({ connectionString: TEST_PG, max: 1 });
    admin = new pg.Client({ connectionString: TEST_PG });
    await admin.connect();
  });
  after(async () => {
    await pool?.end().catch(() => {});
    await admin?.end().catch(() => {});
  });

  const backend = async () => (await query<{ pid: number }>(pool, 'SELECT pg_backend_pid() AS pid')).rows[0]!.pid;

  it('query and queryPrepared: the statement after an error runs on the same backend', async () => {
    const first = await backend();
    await assert.rejects(query(pool, 'SELECT 1 / $1::int', [0]), /division by zero/);
    assert.equal(await backend(), first, 'query kept the connection after a SQL error');
    await assert.rejects(queryPrepared(pool, 'dibs_test_divide', 'SELECT 1 / $1::int', [0]), /division by zero/);
    assert.equal(await backend(), first, 'queryPrepared kept the connection after a SQL error');
    assert.equal(
      (await queryPrepared<{ '?column?': number }>(pool, 'dibs_test_divide', 'SELECT 1 / $1::int', [1])).rows[0]![
        '?column?'
      ],
      1,
      'the prepared statement still runs on it',
    );
    assert.equal(pool.totalCount, 1, 'still one connection');
  });

  it('a connection the server ends in the middle of a statement is thrown away', async () => {
    const first = await backend();
    // Its rejection is awaited below; attached now, since it lands while the test awaits the termination.
    const sleeping = assert.rejects(query(pool, 'SELECT pg_sleep(30)'), /terminating connection/);
    // Ended once it is seen running the statement (not after a fixed delay).
    for (let seen = false; !seen; ) {
      const rows = await admin.query('SELECT 1 FROM pg_stat_activity WHERE pid = $1 AND query LIKE $2', [
        first,
        '%pg_sleep%',
      ]);
      seen = rows.rowCount === 1;
    }
    await admin.query('SELECT pg_terminate_backend($1)', [first]);
    await sleeping;
    assert.notEqual(await backend(), first, 'a new backend after the old one was terminated');
    assert.equal(pool.totalCount, 1, 'the ended connection left the pool');
  });
});
