/**
 * Several hosts in one PostgreSQL store URL, against the shared test server (the failover itself is
 * test/faults/pg-failover.test.ts): the URL form is parsed like libpq's, a dead host before the real
 * one is passed over, and a server that refuses writes as read-only (SQLSTATE 25006: a standby, a
 * demoted primary) answers `unavailable` — never a raw driver error (HTTP 500).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isDibsError, openDibs, type Dibs } from '../../src/index.js';
import { parseStoreUrl } from '../../src/backends/registry.js';
import { foldHosts, parseHosts, parseSessionAttrs } from '../../src/backends/postgres/hosts.js';
import { startFaultProxy } from '../support/fault-proxy.js';
import { adminQuery, requirePostgres, tempPgStore, TEST_PG } from '../support/postgres.js';

describe('postgres store URL with several hosts', () => {
  it('moves the host list into a hosts parameter and reads it back', () => {
    const folded = foldHosts('postgres://u:p%40ss@db1:5433,db2,[::1]:5434/app?sslmode=require');
    assert.equal(
      folded,
      'postgres://u:p%40ss@db1:5433/app?sslmode=require&hosts=db1%3A5433%2Cdb2%2C%5B%3A%3A1%5D%3A5434',
    );
    const url = parseStoreUrl('postgresql://db1:5433,db2/app');
    assert.deepEqual(parseHosts(url.searchParams.get('hosts'), url), [
      { host: 'db1', port: 5433 },
      { host: 'db2', port: 5432 },
    ]);
    assert.deepEqual(parseHosts('[::1]:5434', url), [{ host: '::1', port: 5434 }]);
    assert.equal(foldHosts('postgres://db1:5432/app'), null);
    // a comma in the password is not a host list
    assert.equal(foldHosts('postgres://u:p,w@db1:5432/app'), null);
    assert.equal(new URL(foldHosts('postgres://u:p,w@a,b/app')!).searchParams.get('hosts'), 'a,b');
    assert.throws(() => parseHosts('db1:0,db2', url));
    assert.equal(parseSessionAttrs(null), 'read-write');
    assert.equal(parseSessionAttrs('any'), 'any');
    assert.throws(() => parseSessionAttrs('standby'));
  });
});

const skip = await requirePostgres();

describe('postgres: host selection on a live server', { skip }, () => {
  const role = `dibs_ro_${Math.random().toString(36).slice(2, 8)}`;
  const temp = tempPgStore({ poolSize: '2', connectTimeoutMs: '3000' });
  let dibs: Dibs | undefined;
  before(async () => {
    dibs = await openDibs(temp.store);
    await dibs.pools.create({ name: 'h' });
    await dibs.pools.importCodes('h', ['H-1', 'H-2', 'H-3', 'H-4']);
    // a login whose every session is read-only: what a standby or a demoted primary answers to writes
    await adminQuery(`CREATE ROLE ${role} LOGIN SUPERUSER`);
    await adminQuery(`ALTER ROLE ${role} SET default_transaction_read_only = on`);
  });
  after(async () => {
    await dibs?.close();
    await temp.drop();
    await adminQuery(`DROP ROLE IF EXISTS ${role}`);
  });

  const url = (mutate: (u: URL) => void) => {
    const u = new URL(temp.store);
    mutate(u);
    return u.href;
  };

  it('passes over a dead host listed first and writes to the live one', async () => {
    const live = new URL(TEST_PG);
    // port 1 on loopback: connection refused
    const store = temp.store.replace(`@${live.host}`, `@127.0.0.1:1,${live.host}`);
    assert.notEqual(store, temp.store);
    const multi = await openDibs(store);
    try {
      assert.equal((await multi.pools.claim('h', 'multi')).status, 'claimed');
      assert.equal((await multi.health()).details.primary, `${live.hostname}:${live.port || 5432}`);
    } finally {
      await multi.close();
    }
  });

  it('does not wait for a host listed first that answers nothing (a dead machine: no RST)', async () => {
    const live = new URL(TEST_PG);
    const dead = await startFaultProxy({ host: live.hostname, port: Number(live.port || 5432) });
    dead.blackhole(true);
    // connectTimeoutMs 2000: waiting for the dead host first would fail every connect
    const store = url((u) => u.searchParams.set('connectTimeoutMs', '2000')).replace(
      `@${live.host}`,
      `@${dead.host}:${dead.port},${live.host}`,
    );
    const started = performance.now();
    const multi = await openDibs(store);
    try {
      assert.equal((await multi.pools.claim('h', 'past-the-dead')).status, 'claimed');
      assert.ok(
        performance.now() - started < 1900,
        `served without waiting out the dead host (${Math.round(performance.now() - started)} ms)`,
      );
    } finally {
      await multi.close();
      dead.blackhole(false);
      await dead.close();
    }
  });

  it('a write refused as read-only (25006) is unavailable, with or without target_session_attrs', async () => {
    for (const attrs of [null, 'any']) {
      // the open (its migrations' CREATE SCHEMA IF NOT EXISTS) is the first write refused
      const answer = await openDibs(
        url((u) => {
          u.username = role;
          if (attrs) u.searchParams.set('target_session_attrs', attrs);
        }),
      ).then(
        async (d) => {
          const claimed = await d.pools.claim('h', `ro-${attrs}`).then(
            () => null,
            (error: unknown) => error,
          );
          await d.close();
          return claimed;
        },
        (error: unknown) => error,
      );
      assert.ok(isDibsError(answer, 'unavailable'), `unavailable, got ${String(answer)}`);
      assert.equal((answer as { cause?: { code?: string } }).cause?.code, '25006');
    }
  });

  it('with target_session_attrs=read-write a read-only server is never used for a connection', async () => {
    const answer = await openDibs(
      url((u) => {
        u.username = role;
        u.searchParams.set('target_session_attrs', 'read-write');
      }),
    ).then(
      async (d) => {
        await d.close();
        return null;
      },
      (error: unknown) => error,
    );
    assert.ok(isDibsError(answer, 'unavailable'), `unavailable, got ${String(answer)}`);
    assert.match((answer as Error).message, /no writable PostgreSQL host/);
  });
});
