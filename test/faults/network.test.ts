/**
 * Network faults between dibs and its store, under a 4-process claim storm: a loopback proxy
 * resets connections, stalls them, black-holes them (no RST, no FIN — only a timeout notices) and
 * refuses new ones, on a schedule. Afterwards the product's verifier checks everything the clients
 * were told against the store (I1 no code twice, I2 limits and idempotent replays, I4 counters =
 * ledger, I5 every acknowledged claim still there, the store's audit clean); calls that failed did
 * so as retriable `unavailable`, never hung and never as an unexplained error; and a process that
 * lived through the faults claims normally again (its connection pool is not left broken).
 *
 * Found by this test (fixed): a PostgreSQL statement on a black-holed connection waited forever
 * (now `queryTimeoutMs`), and a Redis command timeout escaped as a raw error instead of `unavailable`.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js';
import { FAULT_WINDOW_MS, LONG, networkFaults, type FaultLog } from '../support/faults.js';
import { requirePostgres, tempPgStore } from '../support/postgres.js';
import { deletePrefix, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';
import { assertBuysSurvived, pgStoredOrders, runSaleStorm, spread, type SaleOp } from '../support/sale-storm.js';
import { assertStormInvariants, runClaimStorm } from '../support/storm.js';
import { assertMutualExclusion, runLockStormUnderFaults } from '../support/lock-storm.js';

/** Store timeouts in these tests: short, so black holes turn into errors within the window. */
const TIMEOUT_MS = 1000;
const CODES = LONG ? 20_000 : 3000;
const CLAIMANTS = LONG ? 40_000 : 4000;

interface Target {
  label: string;
  skip: string | false;
  /** Store URLs: through the proxy (workload) and direct (setup and audit). */
  open(proxy: FaultProxy): Promise<{ viaProxy: string; direct: string; cleanup(): Promise<void> }>;
  upstream: { host: string; port: number };
}

const pgSkip = await requirePostgres();
const redisSkip = (await sharedRedisAvailable()) ? false : 'redis on 127.0.0.1:6379 is not reachable';

const TARGETS: Target[] = [
  {
    label: 'postgres',
    skip: pgSkip,
    upstream: { host: '127.0.0.1', port: 5432 },
    async open(proxy) {
      const temp = tempPgStore({
        poolSize: '4',
        queryTimeoutMs: String(TIMEOUT_MS),
        connectTimeoutMs: String(TIMEOUT_MS),
      });
      const via = new URL(temp.store);
      via.port = String(proxy.port);
      return { viaProxy: via.toString(), direct: temp.store, cleanup: () => temp.drop() };
    },
  },
  {
    label: 'redis',
    skip: redisSkip,
    upstream: { host: '127.0.0.1', port: 6379 },
    async open(proxy) {
      const prefix = testPrefix();
      const direct = `${SHARED_REDIS}?prefix=${prefix}&commandTimeoutMs=${TIMEOUT_MS}`;
      const via = new URL(direct);
      via.port = String(proxy.port);
      return { viaProxy: via.toString(), direct, cleanup: () => deletePrefix(SHARED_REDIS, prefix) };
    },
  },
];

for (const target of TARGETS) {
  describe(`${target.label}: network faults under a claim storm`, { skip: target.skip, timeout: 300_000 }, () => {
    let proxy: FaultProxy;
    let stores: Awaited<ReturnType<Target['open']>>;
    let dibs: Dibs;
    before(async () => {
      proxy = await startFaultProxy(target.upstream);
      stores = await target.open(proxy);
      dibs = await openDibs(stores.direct);
    });
    after(async () => {
      await dibs?.close();
      await proxy?.close();
      await stores?.cleanup();
    });

    it(`resets, stalls, black holes and refusals for ${FAULT_WINDOW_MS / 1000} s: nothing lost, nothing doubled, no hang`, async () => {
      await dibs.pools.create({ name: 'net' });
      await dibs.pools.importCodes(
        'net',
        Array.from({ length: CODES }, (_, i) => `NET-${i}`),
      );
      let faults: Promise<FaultLog> = Promise.resolve({ injected: { reset: 0, stall: 0, blackhole: 0, refuse: 0 } });
      const outcomes = await runClaimStorm({
        store: stores.viaProxy,
        pool: 'net',
        processes: 4,
        claimants: CLAIMANTS,
        concurrency: 8,
        timeoutMs: 240_000,
        onStart: () => {
          faults = networkFaults(proxy, { timeoutMs: TIMEOUT_MS });
        },
      });
      const log = await faults;
      assert.ok(
        log.injected.reset > 0 && log.injected.stall > 0 && log.injected.blackhole > 0 && log.injected.refuse > 0,
        `every kind of fault was injected: ${JSON.stringify(log)}`,
      );
      const errors = outcomes.filter((o) => o.status === 'error' && o.error !== 'sold_out');
      assert.ok(errors.length > 0, 'the faults were felt by the clients');
      assert.deepEqual(
        [...new Set(errors.map((o) => o.error))].filter((e) => e !== 'unavailable'),
        [],
        'every failure is the retriable unavailable',
      );
      // nothing hung: a call never took much longer than the store timeouts plus a stall
      const slowest = Math.max(...outcomes.map((o) => o.ms));
      assert.ok(slowest < 30_000, `slowest call ${Math.round(slowest)} ms`);
      const summary = await assertStormInvariants(dibs, 'net', outcomes, {
        codes: CODES,
        perClaimantLimit: 1,
        allowedErrors: ['unavailable'],
        allowUnacknowledged: true,
      });
      assert.ok(summary.codesGiven > 0);
      console.log(
        `${target.label}: faults ${JSON.stringify(log.injected)}, answers ${outcomes.length}, unavailable ${errors.length}, codes given ${summary.codesGiven}, violations 0`,
      );
    });

    it('a 4-process lock storm behind the same faults: no two holders of a key, fences grow, every key usable after', async () => {
      const keys = Array.from({ length: 8 }, (_, i) => `net-lock-${i}`);
      const storm = runLockStormUnderFaults({
        store: stores.viaProxy,
        processes: 4,
        keys,
        rounds: LONG ? 200 : 24,
        holdMs: 10,
        ttlMs: 3_000,
      });
      // Faults start once the storm is under way (the workers have opened and taken a lock).
      // (Direct calls of this process may time out too on a loaded machine: they are retried.)
      const retried = async <T>(call: () => Promise<T>): Promise<T> => {
        for (let attempt = 1; ; attempt++) {
          try {
            return await call();
          } catch (error) {
            if ((error as { code?: string }).code !== 'unavailable' || attempt >= 20) throw error;
            await sleep(100);
          }
        }
      };
      for (let i = 0; i < 1200 && (await retried(() => dibs.locks.inspect(keys[0]!))).lastFence === 0; i++)
        await sleep(50);
      const log = await networkFaults(proxy, { timeoutMs: TIMEOUT_MS });
      const result = await storm;
      assert.ok(log.injected.reset > 0 && log.injected.blackhole > 0, JSON.stringify(log));
      assert.equal(result.sections.length + result.lost, 4 * (LONG ? 200 : 24), 'every round ran once');
      assertMutualExclusion(result.sections, keys);
      for (const key of keys) {
        const lastFence = Math.max(0, ...result.sections.filter((x) => x.key === key).map((x) => x.fence));
        const lease = await retried(() => dibs.locks.acquire(key, { ttlMs: 10_000, waitMs: 30_000 }));
        assert.ok(lease.fence > lastFence, `${key}: fence ${lease.fence} after ${lastFence}`);
        await retried(() => dibs.locks.release(lease));
      }
      console.log(
        `${target.label} locks: faults ${JSON.stringify(log.injected)}, sections ${result.sections.length}, unavailable ${result.unavailable} (retried), leases lost ${result.lost}, violations 0`,
      );
    });

    it('a process that lived through the faults claims normally again', async () => {
      const client = await openDibs(stores.viaProxy);
      try {
        await client.pools.create({ name: 'after' });
        await client.pools.importCodes(
          'after',
          Array.from({ length: 50 }, (_, i) => `AFT-${i}`),
        );
        // break every connection this process holds, several ways, then use it
        await client.pools.claim('after', 'warm');
        proxy.blackhole(true);
        await assert.rejects(
          client.pools.claim('after', 'lost-in-the-hole'),
          (e: { code?: string }) => e.code === 'unavailable',
        );
        proxy.blackhole(false);
        proxy.reset();
        let ok = 0;
        for (let i = 0; i < 20; i++) {
          try {
            await client.pools.claim('after', `user-${i}`);
            ok++;
          } catch (error) {
            assert.equal(
              (error as { code?: string }).code,
              'unavailable',
              'only the first calls after a reset may fail, retriably',
            );
          }
        }
        assert.ok(ok >= 18, `claims succeed again after the faults (${ok}/20)`);
        assert.deepEqual(await client.pools.audit('after'), []);
      } finally {
        await client.close();
      }
    });
  });
}

describe('postgres: network faults under a flash sale', { skip: pgSkip, timeout: 300_000 }, () => {
  let proxy: FaultProxy;
  const temp = tempPgStore({ poolSize: '4', queryTimeoutMs: String(TIMEOUT_MS), connectTimeoutMs: String(TIMEOUT_MS) });
  let dibs: Dibs;
  before(async () => {
    proxy = await startFaultProxy({ host: '127.0.0.1', port: 5432 });
    dibs = await openDibs(temp.store);
  });
  after(async () => {
    await dibs?.close();
    await proxy?.close();
    await temp.drop();
  });

  it('every acknowledged order kept, interrupted keyed buys replay or buy once, sold ≤ cap, audit clean', async () => {
    const cap = 300;
    const sale = await dibs.sales.create({
      sku: 'NETSALE',
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      cap,
      perCustomerLimit: 2,
    });
    const buyers = LONG ? 6000 : 1200;
    const ops: SaleOp[] = Array.from({ length: buyers }, (_, i) => ({
      customer: `buyer-${i % (buyers / 2)}`,
      kind: 'buy',
      quantity: 1,
      thinkMs: 0,
      ...(i % 3 === 0 ? {} : { key: `order-${i}` }),
    }));
    const via = new URL(temp.store);
    via.port = String(proxy.port);
    let faults: Promise<FaultLog> = Promise.resolve({ injected: { reset: 0, stall: 0, blackhole: 0, refuse: 0 } });
    const outcomes = await runSaleStorm({
      store: via.toString(),
      sale: sale.id,
      lanes: spread(ops, 4),
      concurrency: 8,
      // runs once every worker is ready and told to go
      during: async () => {
        faults = networkFaults(proxy, { timeoutMs: TIMEOUT_MS });
        await faults;
      },
    });
    const log = await faults;

    assert.ok(
      outcomes.some((o) => o.error === 'unavailable'),
      'the faults were felt',
    );
    const seen = await assertBuysSurvived(dibs, pgStoredOrders(temp.schema), sale.id, cap, outcomes);
    console.log(
      `postgres sale: faults ${JSON.stringify(log.injected)}, answers ${outcomes.length}, unavailable ${seen.unavailable} (${seen.retried} keyed, retried), sold ${seen.sold}/${cap}, violations 0`,
    );
  });
});
