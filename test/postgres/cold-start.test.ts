/**
 * Cold starts on PostgreSQL (serverless instances open dibs per instance or per invocation):
 * opening a current schema does no migration work — not even the migration lock — and holds one
 * connection; open → claim → close in a loop leaves no connection behind, also through a
 * PgBouncer in transaction mode with a direct `listen=` connection for lock wake-ups.
 */
import assert from 'node:assert/strict';
import pg from 'pg';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDibs, type Dibs } from '../../src/index.js';
import { requirePgBouncer, startPgBouncer, type PgBouncer } from '../support/pgbouncer.js';
import { adminQuery, requirePostgres, tempPgStore, TEST_PG } from '../support/postgres.js';

const skip = await requirePostgres();

describe('postgres cold start', { skip }, () => {
  const temp = tempPgStore({ application_name: `dibs-cold-${process.pid}` });
  const app = `dibs-cold-${process.pid}`;
  const connections = async () =>
    (
      await adminQuery<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [
        app,
      ])
    )[0]!.n;

  before(async () => {
    const dibs = await openDibs(temp.store); // migrates the fresh schema
    await dibs.pools.create({ name: 'cold', perClaimantLimit: 1000 });
    await dibs.pools.importCodes(
      'cold',
      Array.from({ length: 200 }, (_, i) => `C${i}`),
    );
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
      const outcome = await Promise.race([
        opening.then(() => 'opened'),
        new Promise((resolve) => setTimeout(resolve, 5_000, 'blocked')),
      ]);
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

describe('postgres cold start through PgBouncer (transaction mode, listen=)', {
  skip: skip || requirePgBouncer(),
}, () => {
  const temp = tempPgStore();
  let bouncer: PgBouncer;
  let store: string;
  const listenApp = `dibs-cold-listen-${process.pid}`;
  /** This file's clients of the bouncer (its admin console aside) and direct LISTEN connections. */
  const clients = async () =>
    (await bouncer.admin<{ database: string }>('SHOW CLIENTS')).filter((c) => c.database !== 'pgbouncer').length;
  const listeners = async () =>
    (
      await adminQuery<{ n: number }>('SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = $1', [
        listenApp,
      ])
    )[0]!.n;

  before(async () => {
    bouncer = await startPgBouncer({ poolSize: 4 });
    const listen = new URL(TEST_PG);
    listen.searchParams.set('application_name', listenApp);
    store = bouncer.url({ schema: temp.schema, pooler: 'transaction', poolSize: '2', listen: listen.href });
    const dibs = await openDibs(store); // migrates the fresh schema through the bouncer
    await dibs.pools.create({ name: 'cold', perClaimantLimit: 1000 });
    await dibs.pools.importCodes(
      'cold',
      Array.from({ length: 200 }, (_, i) => `C${i}`),
    );
    await dibs.close();
  });
  after(async () => {
    await bouncer?.stop();
    await temp.drop();
  });

  /** Holds a lock and has a second acquire wait for it (the waiter listens), then hands over. */
  async function contendedLock(dibs: Dibs, key: string, during: () => Promise<void> = async () => {}): Promise<void> {
    const first = await dibs.locks.acquire(key, { ttlMs: 10_000 });
    const second = dibs.locks.acquire(key, { ttlMs: 10_000, waitMs: 10_000 });
    await sleep(100);
    await during();
    await dibs.locks.release(first);
    await dibs.locks.release(await second);
  }

  it('opening holds one bouncer connection and no LISTEN connection; a lock wait opens the LISTEN one', async () => {
    const dibs = await openDibs(store);
    try {
      assert.equal(await clients(), 1, 'one client connection after opening (the version check)');
      assert.equal(await listeners(), 0, 'no LISTEN connection before a lock is waited for');
      await contendedLock(dibs, 'cold-start:probe', async () => {
        assert.equal(await listeners(), 1, 'the waiter listens on the direct connection');
      });
    } finally {
      await dibs.close();
    }
  });

  it('open → claim → contended lock → close per invocation, 20 times, leaves no connection behind', async () => {
    for (let i = 0; i < 20; i++) {
      const dibs = await openDibs(store);
      try {
        await dibs.pools.claim('cold', `invocation-${i}`);
        await contendedLock(dibs, `cold-start:${i % 3}`);
      } finally {
        await dibs.close();
      }
    }
    // A closed connection leaves the server's and the bouncer's lists a moment later.
    for (let tries = 0; tries < 40 && (await clients()) + (await listeners()) > 0; tries++) await sleep(50);
    assert.equal(await clients(), 0, 'every bouncer connection closed');
    assert.equal(await listeners(), 0, 'every LISTEN connection closed');
    const dibs = await openDibs(store);
    try {
      assert.equal((await dibs.pools.stats('cold')).claimed, 20);
      assert.deepEqual(await dibs.pools.audit('cold'), []);
    } finally {
      await dibs.close();
    }
  });
});
