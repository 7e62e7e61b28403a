/**
 * Cold starts on PostgreSQL (serverless instances open dibs per instance or per invocation):
 * opening a current schema does no migration work — not even the migration lock — and holds one
 * connection; open → claim → close in a loop leaves no connection behind.
 */
import assert from 'node:assert/strict';
import pg from 'pg';
import { after, before, describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { adminQuery, requirePostgres, tempPgStore, TEST_PG } from '../support/postgres.js';

const skip = await requirePostgres();

describe('postgres cold start', { skip }, () => {
  const temp = tempPgStore({ application_name: `dibs-cold-${process.pid}` });
  const app = `dibs-cold-${process.pid}`;
  const connections = async () => (await adminQuery<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [app]))[0]!.n;

  before(async () => {
    const dibs = await openDibs(temp.store); // migrates the fresh schema
    await dibs.pools.create({ name: 'cold', perClaimantLimit: 1000 });
    await dibs.pools.importCodes('cold', Array.from({ length: 200 }, (_, i) => `C${i}`));
    await dibs.close();
  });
  after(() => temp.drop());

  it('opening a current schema takes no migration lock (one version check)', async () => {
    // Another session holds the migration lock (as a deploy migrating would): an open that
    // still ran the migration step would wait for it.
    const holder = new pg.Client({ connectionString: TEST_PG });
    await holder.connect();
    try {
      await holder.query('SELECT pg_advisory_lock(hashtext($1))', [`dibs:migrate:${temp.schema}`]);
      const started = Date.now();
      const opening = openDibs(temp.store);
      const outcome = await Promise.race([opening.then(() => 'opened'), new Promise((resolve) => setTimeout(resolve, 5_000, 'blocked'))]);
      assert.equal(outcome, 'opened', 'openDibs waited for the migration lock although the schema is current');
      const dibs = await opening;
      assert.ok(Date.now() - started < 5_000);
      assert.equal(await connections(), 1, 'one connection after opening (the check), nothing else yet');
      await dibs.close();
    } finally {
      await holder.end();
    }
  });

  it('open → claim → close per invocation leaves no connection behind', async () => {
    for (let i = 0; i < 20; i++) {
      const dibs = await openDibs(temp.store);
      await dibs.pools.claim('cold', `invocation-${i}`);
      await dibs.close();
    }
    assert.equal(await connections(), 0, 'every connection closed');
    const dibs = await openDibs(temp.store);
    assert.equal((await dibs.pools.stats('cold')).claimed, 20);
    await dibs.close();
  });
});
