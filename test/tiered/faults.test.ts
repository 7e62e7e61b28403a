/**
 * Tiered mode under Redis faults, on a test-owned redis-server (no persistence) over a PostgreSQL
 * ledger (and once over SQLite): during a paced 4-process buy storm with more demand than units, Redis is
 * (a) SIGKILLed and stays down, (b) FLUSHALLed, (c) SIGKILLed and restarted empty, (g) the sale's keys
 * rolled back 400 ms (DUMP … RESTORE, as a failover to a lagging replica would). On a test-owned
 * 3-master Cluster, only the master that owns the sale's slot is (d) FLUSHALLed or (e) SIGKILLed and
 * restarted empty; and (f) with one master down, its sales sell through the ledger while a sale on
 * another master keeps the fast path.
 * Afterwards: sold ≤ cap (the ledger's CHECK holds it at every instant), every acknowledged order
 * is in the ledger, nobody over the limit, the audit (grants included) is clean — and, since
 * demand exceeds the cap, sold = cap once late buyers have drained the sale: no unit stays
 * stranded in a grant Redis forgot.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { Redis } from 'ioredis';
import { isDibsError, openDibs, type Dibs } from '../../src/index.js';
import { adminQuery, postgresUnreachable } from '../support/postgres.js';
import { tieredSaleKeys } from '../../src/backends/redis/keys.js';
import {
  clusterForSuite,
  redisServerInstalled,
  startRedis,
  type OwnedCluster,
  type OwnedRedis,
} from '../support/redis.js';
import { runSaleStorm, spread, type SaleOp } from '../support/sale-storm.js';
import { tempTieredStore, type Ledger } from '../support/tiered.js';

const ready = redisServerInstalled() && (await postgresUnreachable()) === null;
const HOUR = 3_600_000;
const CAP = 120;
const BUYERS = 180;

/** Reads the ledger directly (not through dibs): `{orders}`, `{grants}`, `{sales}` name its tables, `$1` the one parameter. */
async function ledgerRows<R extends Record<string, unknown>>(
  temp: { store: string; schema?: string },
  sql: string,
  [value]: [string],
): Promise<R[]> {
  if (temp.schema) {
    const text = sql
      .replace(/\{orders\}/g, `"${temp.schema}".sale_orders`)
      .replace(/\{grants\}/g, `"${temp.schema}".sale_grants`)
      .replace(/\{sales\}/g, `"${temp.schema}".sales`);
    return adminQuery<R>(text, [value]);
  }
  const db = new Database(new URL(temp.store).pathname, { readonly: true });
  try {
    const text = sql
      .replace(/\{orders\}/g, 'dibs_orders')
      .replace(/\{grants\}/g, 'dibs_sale_grants')
      .replace(/\{sales\}/g, 'dibs_sales')
      .replace(/\$1/g, '@v');
    return db.prepare(text).all({ v: value }) as R[];
  } finally {
    db.close();
  }
}

/** Where the fast path lives: its URL, and how to bring it back if a fault left (part of) it down. */
interface FastPath {
  url: string;
  revive(): Promise<void>;
}

/** A fault lands mid-storm; it knows the sale and the key prefix, so it can find the sale's slot. */
type Fault = (target: { sale: string; prefix: string }) => Promise<void>;

/** Brings a test-owned redis-server back if a fault left it down (restarted empty: no persistence). */
async function revive(server: OwnedRedis): Promise<void> {
  if (server.process.exitCode !== null || server.process.signalCode !== null) await server.restart();
}

async function flushAll(url: string): Promise<void> {
  const client = new Redis(url);
  try {
    await client.flushall();
  } finally {
    client.disconnect();
  }
}

/**
 * Rolls the sale's fast-path keys back in time, as a failover to a lagging replica or a restore of
 * an older RDB would: DUMPed now, RESTOREd (atomically) `laterMs` later, while the storm goes on
 * selling and refilling in between.
 */
async function rollBack(url: string, target: { sale: string; prefix: string }, laterMs: number): Promise<void> {
  const keys = Object.values(tieredSaleKeys(target.prefix, target.sale));
  const client = new Redis(url);
  try {
    const dumps = await Promise.all(
      keys.map(async (key) => ({ key, dump: await client.dumpBuffer(key), ttl: await client.pttl(key) })),
    );
    await sleep(laterMs);
    const restore = client.multi();
    for (const { key, dump, ttl } of dumps) {
      if (dump === null) restore.del(key);
      else restore.restore(key, Math.max(ttl, 0), dump, 'REPLACE');
    }
    await restore.exec();
  } finally {
    client.disconnect();
  }
}

const killAndRestart = async (server: OwnedRedis): Promise<void> => {
  await server.kill();
  await sleep(300);
  await server.restart();
};

/**
 * During a paced 4-process storm with more demand than units, `fault` lands once a fifth of the
 * units are sold. Then: buyers only heard sold_out, every acknowledged order is in the ledger once,
 * sold ≤ cap, the audit (grants included) is clean, and late buyers drain the sale to sold = cap.
 * Returns what it saw: units the storm sold, late buyers, grants the ledger revoked (reconciliation
 * after a loss, or Redis being down).
 */
async function stormThrough(
  fastPath: FastPath,
  label: string,
  fault: Fault,
  ledger: Ledger = 'postgres',
): Promise<{ stormSold: number; late: number; revoked: number }> {
  await fastPath.revive();
  const temp = tempTieredStore(ledger, {
    redis: fastPath.url,
    ...(ledger === 'postgres' ? { ledgerParams: { poolSize: '6' } } : {}),
    fast: { chunk: '8', breakerMs: '300', recheckMs: '100', commandTimeoutMs: '500', grantTtlMs: '5000' },
  });
  const dibs: Dibs = await openDibs(temp.store);
  try {
    const sale = await dibs.sales.create({
      sku: `FAULT-${label}`,
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + HOUR).toISOString(),
      cap: CAP,
      perCustomerLimit: 1,
    });
    const ops: SaleOp[] = Array.from({ length: BUYERS }, (_, i) => ({
      customer: `buyer-${i}`,
      kind: 'buy',
      quantity: 1,
      thinkMs: 0,
      delayMs: 15,
      ...(i % 2 === 0 ? { key: `buyer-${i}/checkout` } : {}),
    }));
    let faulted = false;
    const outcomes = await runSaleStorm({
      store: temp.store,
      sale: sale.id,
      lanes: spread(ops, 4),
      concurrency: 3,
      timeoutMs: 180_000, // generous: worker start-up alone took a minute at load average 55
      during: async (done) => {
        // Wait on state: the fault lands once a fifth of the units are sold, mid-storm.
        while (!done() && (await dibs.sales.get(sale.id)).stats.sold < CAP / 5) await sleep(5);
        if (done()) return;
        await fault({ sale: sale.id, prefix: temp.prefix });
        faulted = true;
      },
    });
    assert.ok(faulted, 'the fault landed while the storm was running');
    assert.equal(outcomes.length, BUYERS);
    const wrong = outcomes.filter((o) => o.status === 'error' && o.error !== 'sold_out');
    assert.deepEqual(wrong, [], 'buyers only ever hear sold_out: the ledger served them while Redis was away');

    // Every acknowledged order is durable in the ledger, once.
    const stored = new Map(
      (
        await ledgerRows<{ id: string; customer: string }>(
          temp,
          'SELECT id, customer FROM {orders} WHERE sale_id = $1',
          [sale.id],
        )
      ).map((r) => [r.id, r.customer]),
    );
    const acknowledged = outcomes.filter((o) => o.status === 'ok');
    for (const o of acknowledged)
      assert.equal(stored.get(o.orderId!), o.customer, `acknowledged order ${o.orderId} is in the ledger`);
    let sold = (await dibs.sales.get(sale.id)).stats.sold;
    assert.ok(sold <= CAP, `sold ${sold} ≤ cap ${CAP}`);
    assert.equal(new Set(acknowledged.map((o) => o.orderId)).size, acknowledged.length);
    assert.deepEqual(await dibs.sales.audit(sale.id), [], 'audit clean, grants included');

    // Demand exceeded the cap: with Redis back, late buyers must find every unit the storm left
    // (none stranded in a grant Redis lost) — until the sale answers sold_out for good.
    await fastPath.revive();
    const deadline = Date.now() + 20_000;
    let late = 0;
    let soldOutInARow = 0;
    while (soldOutInARow < 3 && Date.now() < deadline) {
      try {
        await dibs.sales.buy(sale.id, `late-${late++}`);
        soldOutInARow = 0;
      } catch (error) {
        if (!isDibsError(error, 'sold_out')) throw error;
        soldOutInARow++;
        await sleep(150); // past the sold-out recheck, so the next answer comes from the ledger again
      }
    }
    sold = (await dibs.sales.get(sale.id)).stats.sold;
    const grants = await ledgerRows<{ open: number; escrow: number; revoked: number }>(
      temp,
      'SELECT (SELECT count(*) FROM {grants} WHERE sale_id = $1 AND revoked_at IS NULL AND size > used) AS open, (SELECT count(*) FROM {grants} WHERE sale_id = $1 AND revoked_at IS NOT NULL) AS revoked, (SELECT escrow FROM {sales} WHERE id = $1) AS escrow',
      [sale.id],
    );
    assert.equal(
      sold,
      CAP,
      `sold = cap after the drain (storm sold ${acknowledged.length}, late buyers ${late}, grants ${JSON.stringify(grants[0])})`,
    );
    assert.deepEqual(await dibs.sales.audit(sale.id), []);
    return { stormSold: acknowledged.length, late, revoked: Number(grants[0]!.revoked) };
  } finally {
    await dibs.close();
    await temp.drop();
  }
}

describe('tiered ledger + redis: Redis faults during a buy storm', { skip: !ready }, () => {
  let server: OwnedRedis;
  before(async () => {
    server = await startRedis(['--appendonly', 'no']);
  });
  after(async () => {
    await server?.stop();
  });
  const fastPath: FastPath = {
    get url() {
      return server.url;
    },
    revive: () => revive(server),
  };

  it('(a) Redis SIGKILLed mid-storm and left down: the ledger sells the rest, reclaiming the grants', async () => {
    await stormThrough(fastPath, 'kill', () => server.kill());
  });

  it('(b) FLUSHALL mid-storm: lost grants are revoked and reconciled before anything is granted again', async () => {
    await stormThrough(fastPath, 'flush', () => flushAll(server.url));
  });

  it('(c) Redis SIGKILLed and restarted empty mid-storm', async () => {
    await stormThrough(fastPath, 'restart', () => killAndRestart(server));
  });

  it('(c) the same over a SQLite ledger shared by the 4 processes', async () => {
    await stormThrough(fastPath, 'restart-sqlite', () => killAndRestart(server), 'sqlite');
  });

  it("(g) the sale's Redis state rolled back 400 ms mid-storm (DUMP, sales and refills, RESTORE): grants it lost track of are reclaimed, nothing oversold", async () => {
    await stormThrough(fastPath, 'rollback', (target) => rollBack(server.url, target, 400));
  });
});

const pick = (value: unknown, keys: string[]) =>
  Object.fromEntries(keys.map((k) => [k, (value as Record<string, unknown>)[k]]));

const saleSlotOwner = (cluster: OwnedCluster, target: { sale: string; prefix: string }) =>
  cluster.ownerOf(tieredSaleKeys(target.prefix, target.sale).state);

describe('tiered ledger + redis cluster: one of 3 masters faulted during a buy storm', {
  skip: !ready,
  timeout: 240_000,
}, () => {
  // Without full coverage required, the other masters keep answering while one is down — the
  // setting a Cluster under a fast path should have (docs/sales.md).
  const { cluster } = clusterForSuite(['--appendonly', 'no', '--cluster-require-full-coverage', 'no']);
  const fastPath: FastPath = {
    get url() {
      return cluster().url;
    },
    revive: () => cluster().restartDead(),
  };

  it("(d) FLUSHALL of the master that owns the sale's slot: its grants are revoked and reconciled", async () => {
    const seen = await stormThrough(fastPath, 'cluster-flush', async (target) =>
      flushAll(saleSlotOwner(cluster(), target).url),
    );
    assert.ok(seen.revoked > 0, 'the grants the flushed slot forgot were revoked in the ledger');
    console.log(`tiered on cluster, owner FLUSHALLed: ${JSON.stringify(seen)}`);
  });

  it("(e) the master that owns the sale's slot SIGKILLed and restarted empty", async () => {
    const seen = await stormThrough(fastPath, 'cluster-restart', async (target) =>
      killAndRestart(saleSlotOwner(cluster(), target)),
    );
    assert.ok(seen.revoked > 0, 'the grants of the restarted master were revoked in the ledger');
    console.log(`tiered on cluster, owner SIGKILLed and restarted empty: ${JSON.stringify(seen)}`);
  });

  it('(f) one master down: its sales sell through the ledger, the others keep the fast path; back empty, it reconciles', async () => {
    await fastPath.revive();
    const temp = tempTieredStore('postgres', {
      redis: cluster().url,
      fast: { chunk: '4', breakerMs: '200', recheckMs: '100', commandTimeoutMs: '10000' },
    });
    // (A generous command timeout: a dead master refuses at once, and a slow machine must not open the other sale's breaker.)
    const dibs: Dibs = await openDibs(temp.store);
    try {
      const live = (sku: string) =>
        dibs.sales.create({
          sku,
          startsAt: new Date().toISOString(),
          endsAt: new Date(Date.now() + HOUR).toISOString(),
          cap: 40,
          perCustomerLimit: 1,
        });
      const target = (sale: string) => saleSlotOwner(cluster(), { sale, prefix: temp.prefix });
      // Two sales whose slots are on different masters.
      const down = await live('DOWN');
      const downOwner = target(down.id);
      let up = await live('UP-0');
      for (let i = 1; target(up.id) === downOwner && i < 50; i++) up = await live(`UP-${i}`);
      assert.notEqual(target(up.id), downOwner, 'found a sale on another master (bounded: 3 masters, random ids)');
      const fastOrders = async (sale: string) =>
        Number(
          (
            await ledgerRows<{ n: number }>(
              temp,
              'SELECT count(*) AS n FROM {orders} WHERE sale_id = $1 AND grant_id IS NOT NULL',
              [sale],
            )
          )[0]!.n,
        );
      for (const sale of [down, up]) await dibs.sales.buy(sale.id, 'warm-up');
      assert.equal(await fastOrders(down.id), 1, 'both sales start on the fast path');
      assert.equal(await fastOrders(up.id), 1);
      assert.deepEqual(pick((await dibs.health()).details.fastPath, ['ok', 'mode', 'masters', 'breaker']), {
        ok: true,
        mode: 'cluster',
        masters: 3,
        breaker: 'closed',
      });

      await downOwner.kill();
      // Interleaved: a failure on the dead master must not send the other sale to the ledger.
      for (let i = 0; i < 6; i++) {
        await dibs.sales.buy(down.id, `d-${i}`);
        await dibs.sales.buy(up.id, `u-${i}`);
      }
      assert.equal(await fastOrders(down.id), 1, "the dead master's sale was sold by the ledger path");
      assert.equal(await fastOrders(up.id), 7, 'the other sale stayed on the fast path throughout');
      const health = await dibs.health();
      assert.equal(health.ok, true, 'a master down costs speed, not correctness');
      const fast = health.details.fastPath as { ok: boolean; error?: string };
      assert.equal(fast.ok, false);
      assert.match(fast.error ?? '', new RegExp(`:${downOwner.port}`), 'health names the master that does not answer');
      assert.deepEqual(await dibs.sales.audit(down.id), [], "the dead master's grants were revoked: audit clean");

      // Back, empty: the sale's state is gone, so its grants are reconciled and it sells fast again.
      await fastPath.revive();
      const deadline = Date.now() + 20_000;
      for (let i = 0; (await fastOrders(down.id)) < 2 && Date.now() < deadline; i++) {
        await dibs.sales.buy(down.id, `back-${i}`);
        await sleep(50);
      }
      assert.equal(await fastOrders(down.id), 2, 'the sale went back to the fast path after reconciling');
      for (const sale of [down, up]) {
        const orders = await ledgerRows<{ n: number }>(temp, 'SELECT count(*) AS n FROM {orders} WHERE sale_id = $1', [
          sale.id,
        ]);
        assert.equal((await dibs.sales.get(sale.id)).stats.sold, Number(orders[0]!.n));
        assert.deepEqual(await dibs.sales.audit(sale.id), []);
      }
    } finally {
      await dibs.close();
      await temp.drop();
    }
  });
});
