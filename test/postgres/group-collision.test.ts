/**
 * A grouped claim statement fails as a whole when one of its claimants races a claim of the same
 * claimant elsewhere (23505 on the holder slot). The winner has committed by then, so the next
 * statement sees it: the group's claims retry together, as ONE statement, instead of each as a
 * statement of its own — eight claims at once queuing for the process's connections was most of
 * the seed scenario's slowest 1% on PostgreSQL. The rival here is a transaction of the test's own
 * that holds the claimant's slot until the group's statement is seen waiting on it. The connection
 * that got the unique violation is kept: it is healthy, and a new one costs a connect and a first
 * plan of the claim statement.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { openDibs, type Dibs } from '../../src/index.js';
import { requirePostgres, tempPgStore, TEST_PG } from '../support/postgres.js';

const skip = await requirePostgres();

const GROUP = 8;

describe('postgres: a group failed by a racing claim retries as one group', { skip }, () => {
  const app = `dibs-group-collision-${process.pid}`;
  const temp = tempPgStore({ poolSize: String(GROUP), application_name: app });
  let claimer: Dibs;
  let rival: pg.Client;
  before(async () => {
    claimer = await openDibs(temp.store);
    rival = new pg.Client({ connectionString: TEST_PG });
    await rival.connect();
  });
  after(async () => {
    await rival?.query('ROLLBACK').catch(() => {});
    await rival?.end().catch(() => {});
    await claimer?.close();
    await temp.drop();
  });

  it('every claim of the group is answered by one more grouped statement, none alone', async () => {
    await claimer.pools.create({ name: 'g', perClaimantLimit: 1 });
    await claimer.pools.importCodes(
      'g',
      Array.from({ length: 20 }, (_, i) => `G-${i}`),
    );
    const connections = async () => (await claimer.health()).details.connections as number;
    assert.equal(await connections(), 1, 'one connection before the burst');
    const backends = async () =>
      (
        await rival.query<{ pid: number }>(
          'SELECT pid FROM pg_stat_activity WHERE application_name = $1 ORDER BY pid',
          [app],
        )
      ).rows.map((r) => r.pid);
    const before = await backends();

    // The rival claims c0 in a transaction it keeps open: one code and one counter shard, as a claim does.
    await rival.query(`SET search_path TO "${temp.schema}"`);
    await rival.query('BEGIN');
    const { rows } = await rival.query<{ code: string }>(
      `WITH p AS (SELECT id FROM pools WHERE name = 'g'),
       c AS (UPDATE codes SET status = 'claimed', claimant = 'c0', slot = 1, claimed_at = now()
             WHERE id = (SELECT id FROM codes WHERE pool_id = (SELECT id FROM p) AND status = 'free' ORDER BY id LIMIT 1)
             RETURNING code),
       n AS (UPDATE pool_counters SET free = free - 1, claimed = claimed + 1
             WHERE pool_id = (SELECT id FROM p) AND shard = 0 RETURNING 1)
       SELECT code FROM c, n`,
    );
    const rivalCode = rows[0]!.code;
    const rivalPid = (await rival.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;

    // Issued in one turn: one group, whose statement waits on the rival's c0.
    const answers = Promise.all(Array.from({ length: GROUP }, (_, i) => claimer.pools.claim('g', `c${i}`)));
    const watcher = new pg.Client({ connectionString: TEST_PG });
    await watcher.connect();
    try {
      for (let waited = 0; ; waited++) {
        const blocked = await watcher.query('SELECT 1 FROM pg_stat_activity WHERE $1 = ANY (pg_blocking_pids(pid))', [
          rivalPid,
        ]);
        if (blocked.rowCount! > 0) break;
        assert.ok(waited < 2_000, 'the group statement never waited on the rival');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    } finally {
      await watcher.end();
    }
    await rival.query('COMMIT');

    const results = await answers;
    assert.equal(results[0]!.status, 'already-held', 'c0 sees the rival’s claim');
    assert.deepEqual(results[0]!.held, [rivalCode]);
    for (const r of results.slice(1)) assert.equal(r.status, 'claimed', `${r.claimant} claimed`);
    assert.equal(
      await connections(),
      1,
      'the failed group retried as one statement on one connection, not as claims of their own',
    );
    assert.deepEqual(
      await backends(),
      before,
      'the connection that got the unique violation was kept (a SQL error does not break a connection)',
    );
    const stats = await claimer.pools.stats('g');
    assert.equal(stats.claimed, GROUP);
    assert.equal(stats.free, 20 - GROUP);
    assert.deepEqual(await claimer.pools.audit('g'), []);
  });
});
