/**
 * Server-side limits on dibs' PostgreSQL sessions, proven with a one-sided partition: a loopback
 * proxy between dibs and the server stops forwarding bytes — and closes — in both directions, so
 * neither side hears of the other again (no RST, no FIN). The client's queryTimeoutMs only frees
 * the client; these tests check what the SERVER does:
 * - a transaction left idle holding row locks ends within idle_in_transaction_session_timeout,
 *   and the locks are free for others; its work is rolled back;
 * - a statement still running when the client gives up is cancelled by statement_timeout before
 *   the client answers `unavailable`, so it cannot commit afterwards;
 * - the HTTP service's in-flight idempotency record outlives the store's longest operation.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import pg from 'pg';
import { isDibsError, openDibs, type Dibs } from '../../src/index.js';
import { buildServer } from '../../src/service/app.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { parseOptions } from '../../src/backends/postgres/index.js';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js';
import { TEST_PG, requirePostgres, tempPgStore } from '../support/postgres.js';

const skip = await requirePostgres();

/** The client's timeout in these tests; the server-side limits follow from it (80%: 3.2 s). */
const QUERY_TIMEOUT_MS = 4000;
const SERVER_LIMIT_MS = 3200;

async function until(what: string, check: () => Promise<boolean>, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out after ${ms} ms waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

const settle = <T>(p: Promise<T>) =>
  p.then(
    (ok) => ({ ok, at: Date.now() }),
    (error: unknown) => ({ error, at: Date.now() }),
  );

describe('postgres: server-side limits free a partitioned session', { skip, timeout: 120_000 }, () => {
  const temp = tempPgStore({
    poolSize: '2',
    grouped: 'false',
    queryTimeoutMs: String(QUERY_TIMEOUT_MS),
    connectTimeoutMs: String(QUERY_TIMEOUT_MS),
  });
  let proxy: FaultProxy;
  let admin: Dibs;
  let viaProxy: Dibs;
  let blocker: pg.Client;
  let watcher: pg.Client;
  before(async () => {
    const upstream = new URL(TEST_PG);
    proxy = await startFaultProxy({ host: upstream.hostname, port: Number(upstream.port || 5432) });
    admin = await openDibs(temp.store);
    const via = new URL(temp.store);
    via.hostname = proxy.host;
    via.port = String(proxy.port);
    viaProxy = await openDibs(via.href);
    blocker = new pg.Client({ connectionString: TEST_PG });
    watcher = new pg.Client({ connectionString: TEST_PG });
    await blocker.connect();
    await watcher.connect();
  });
  after(async () => {
    proxy?.blackhole(false);
    await blocker?.end().catch(() => {});
    await watcher?.end().catch(() => {});
    await viaProxy?.close().catch(() => {});
    await admin?.close();
    await proxy?.close();
    await temp.drop();
  });

  const blockedByBlocker = async () => {
    const pid = (blocker as unknown as { processID: number }).processID;
    return (
      await watcher.query<{ n: number }>(
        'SELECT count(*)::int AS n FROM pg_stat_activity WHERE $1::int = ANY(pg_blocking_pids(pid))',
        [pid],
      )
    ).rows[0]!.n;
  };

  it('a transaction partitioned while it holds row locks: the server ends it and frees them', async () => {
    await admin.pools.create({ name: 'pub', perClaimantLimit: 1, publicCodes: true });
    await admin.pools.importCodes('pub', ['A-1', 'A-2']);
    // the redeem (a transaction) locks the code row, then waits for the pool row held here
    await blocker.query('BEGIN');
    await blocker.query(`SELECT id FROM "${temp.schema}".pools WHERE name = 'pub' FOR NO KEY UPDATE`);
    const redeem = settle(viaProxy.pools.redeem('pub', 'A-1', { claimant: 'x', orderId: 'order-1' }));
    await until('the redeem to wait for the pool row', async () => (await blockedByBlocker()) >= 1);
    proxy.blackhole(true, { closes: true });
    let freedAfter = -1;
    try {
      await blocker.query('COMMIT');
      // the redeem's session now holds the code row and the pool row, idle, its client unreachable
      const released = Date.now();
      await until(
        'another session to take the code row',
        async () => {
          try {
            await watcher.query('BEGIN');
            await watcher.query(`SELECT 1 FROM "${temp.schema}".codes WHERE code = 'A-1' FOR UPDATE NOWAIT`);
            await watcher.query(`SELECT 1 FROM "${temp.schema}".pools WHERE name = 'pub' FOR UPDATE NOWAIT`);
            freedAfter = Date.now() - released;
            return true;
          } catch (error) {
            if ((error as { code?: string }).code !== '55P03') throw error;
            return false;
          } finally {
            await watcher.query('ROLLBACK');
          }
        },
        20_000,
      );
      const answered = await redeem;
      assert.ok(
        'error' in answered && isDibsError(answered.error, 'unavailable'),
        `the redeem answers unavailable: ${JSON.stringify(answered)}`,
      );
      assert.ok(
        freedAfter <= SERVER_LIMIT_MS + 2500,
        `locks freed ${freedAfter} ms after the session went idle (limit ${SERVER_LIMIT_MS} ms)`,
      );
    } finally {
      await blocker.query('ROLLBACK').catch(() => {});
      proxy.blackhole(false);
    }
    const code = await admin.pools.validate('pub', 'A-1');
    assert.equal(code.code?.status, 'free', 'the abandoned redeem did not commit');
    assert.deepEqual(await admin.pools.audit('pub'), []);
    process.stderr.write(`# idle-in-transaction: locks freed ${freedAfter} ms after the partition\n`);
  });

  it('a statement still running when the client gives up is cancelled first: it never commits after `unavailable`', async () => {
    await admin.pools.create({ name: 'fast' });
    await admin.pools.importCodes('fast', ['B-1', 'B-2', 'B-3']);
    // the claim reaches its counter row and waits: every counter row of the pool is held here
    await blocker.query('BEGIN');
    await blocker.query(
      `SELECT pc.shard FROM "${temp.schema}".pool_counters pc JOIN "${temp.schema}".pools p ON p.id = pc.pool_id WHERE p.name = 'fast' FOR UPDATE OF pc`,
    );
    const started = Date.now();
    const claim = settle(viaProxy.pools.claim('fast', 'y'));
    await until('the claim to wait for a counter row', async () => (await blockedByBlocker()) >= 1);
    proxy.blackhole(true, { closes: true });
    let answered: Awaited<typeof claim>;
    let held: number;
    try {
      answered = await claim;
      assert.ok(
        'error' in answered && isDibsError(answered.error, 'unavailable'),
        `the claim answers unavailable: ${JSON.stringify(answered)}`,
      );
      // only now does the row the statement waits for come free
      await blocker.query('COMMIT');
      await new Promise((r) => setTimeout(r, 1000));
      held = (
        await watcher.query<{ n: number }>(`SELECT count(*)::int AS n FROM "${temp.schema}".codes WHERE claimant = 'y'`)
      ).rows[0]!.n;
    } finally {
      await blocker.query('ROLLBACK').catch(() => {});
      proxy.blackhole(false);
    }
    assert.equal(
      held,
      0,
      `the claim the client gave up on (answered after ${answered.at - started} ms) committed afterwards`,
    );
    assert.equal((await admin.pools.stats('fast')).claimed, 0);
    assert.deepEqual(await admin.pools.audit('fast'), []);
  });
});

describe('postgres: server-side limits follow queryTimeoutMs and stay below it', () => {
  it('defaults, overrides, and a limit at or above the client timeout refused', () => {
    const at = (query: string) => parseOptions(new URL(`postgres://h/db?${query}`));
    assert.deepEqual(pick(at('')), {
      queryTimeoutMs: 60_000,
      statementTimeoutMs: 48_000,
      lockTimeoutMs: 48_000,
      idleInTransactionTimeoutMs: 10_000,
    });
    assert.deepEqual(pick(at('queryTimeoutMs=4000')), {
      queryTimeoutMs: 4000,
      statementTimeoutMs: 3200,
      lockTimeoutMs: 3200,
      idleInTransactionTimeoutMs: 3200,
    });
    assert.deepEqual(pick(at('statementTimeoutMs=30000&lockTimeoutMs=5000&idleInTransactionTimeoutMs=2000')), {
      queryTimeoutMs: 60_000,
      statementTimeoutMs: 30_000,
      lockTimeoutMs: 5000,
      idleInTransactionTimeoutMs: 2000,
    });
    for (const bad of [
      'statementTimeoutMs=60000',
      'lockTimeoutMs=70000',
      'queryTimeoutMs=1000&idleInTransactionTimeoutMs=1000',
    ]) {
      assert.throws(
        () => at(bad),
        (error: unknown) => isDibsError(error, 'invalid_input'),
        bad,
      );
    }
  });
});

const pick = (o: {
  queryTimeoutMs: number;
  statementTimeoutMs: number;
  lockTimeoutMs: number;
  idleInTransactionTimeoutMs: number;
}) => ({
  queryTimeoutMs: o.queryTimeoutMs,
  statementTimeoutMs: o.statementTimeoutMs,
  lockTimeoutMs: o.lockTimeoutMs,
  idleInTransactionTimeoutMs: o.idleInTransactionTimeoutMs,
});

describe('postgres: the HTTP in-flight idempotency record outlives every store timeout', {
  skip,
  timeout: 60_000,
}, () => {
  const temp = tempPgStore({ grouped: 'false' });
  let dibs: Dibs;
  let app: ReturnType<typeof buildServer>;
  let blocker: pg.Client;
  before(async () => {
    dibs = await openDibs(temp.store);
    app = buildServer({ dibs, rateLimit: false });
    await app.ready();
    blocker = new pg.Client({ connectionString: TEST_PG });
    await blocker.connect();
  });
  after(async () => {
    await blocker?.end().catch(() => {});
    await app?.close();
    await dibs?.close();
    await temp.drop();
  });

  it('a claim waiting on the store: its key stays in flight longer than the store could keep it', async () => {
    const { key } = await createApiKey(dibs.backend.service, { tenant: 'default', name: 'pg', scopes: ['admin'] });
    const call = (method: 'POST', url: string, body: unknown, headers: Record<string, string> = {}) =>
      app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json', ...headers },
        payload: JSON.stringify(body),
      });
    assert.equal((await call('POST', '/v1/pools', { name: 'idem' })).statusCode, 201);
    await dibs.pools.importCodes((await dibs.pools.list()).items[0]!.name, ['I-1', 'I-2']);

    await blocker.query('BEGIN');
    await blocker.query(`SELECT shard FROM "${temp.schema}".pool_counters FOR UPDATE`);
    const claim = call('POST', '/v1/pools/idem/claims', { claimant: 'z' }, { 'idempotency-key': 'retry-me' });
    let ttlMs = 0;
    try {
      const read = async () =>
        (
          await blocker.query<{ ms: number }>(
            `SELECT (extract(epoch FROM expires_at - clock_timestamp()) * 1000)::int AS ms FROM "${temp.schema}".idempotency_records WHERE key = 'retry-me'`,
          )
        ).rows[0]?.ms;
      // the blocker's own snapshot moves with each statement (read committed)
      const end = Date.now() + 20_000;
      while ((ttlMs = (await read()) ?? 0) === 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 25));
    } finally {
      await blocker.query('COMMIT');
    }
    const res = await claim;
    assert.equal(res.statusCode, 201, res.body);
    assert.ok(ttlMs > 60_000, `in-flight record lives ${ttlMs} ms; one statement alone may take 60000 ms`);
    const storeLongest = dibs.backend.operationTimeoutMs!;
    assert.ok(storeLongest >= 60_000, `the store reports its longest operation: ${storeLongest} ms`);
    assert.ok(
      ttlMs > storeLongest,
      `in-flight record lives ${ttlMs} ms; the store may keep an operation ${storeLongest} ms (one statement alone: 60000 ms)`,
    );
  });
});
