/**
 * Tiered mode under Redis faults, on a test-owned redis-server (no persistence) over a PostgreSQL
 * ledger (and once over SQLite): during a paced 4-process buy storm with more demand than units, Redis is
 * (a) SIGKILLed and stays down, (b) FLUSHALLed, (c) SIGKILLed and restarted empty.
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
import { redisServerInstalled, startRedis, type OwnedRedis } from '../support/redis.js';
import { runSaleStorm, spread, type SaleOp } from '../support/sale-storm.js';
import { tempTieredStore, type Ledger } from '../support/tiered.js';

const ready = redisServerInstalled() && (await postgresUnreachable()) === null;
const HOUR = 3_600_000;
const CAP = 120;
const BUYERS = 180;

type Fault = (server: OwnedRedis) => Promise<void>;

/** Reads the ledger directly (not through dibs): `{orders}`, `{grants}`, `{sales}` name its tables, `$1` the one parameter. */
async function ledgerRows<R extends Record<string, unknown>>(temp: { store: string; schema?: string }, sql: string, [value]: [string]): Promise<R[]> {
  if (temp.schema) {
    const text = sql.replace('{orders}', `"${temp.schema}".sale_orders`).replace('{grants}', `"${temp.schema}".sale_grants`).replace('{sales}', `"${temp.schema}".sales`);
    return adminQuery<R>(text, [value]);
  }
  const db = new Database(new URL(temp.store).pathname, { readonly: true });
  try {
    const text = sql.replace('{orders}', 'dibs_orders').replace('{grants}', 'dibs_sale_grants').replace('{sales}', 'dibs_sales').replace(/\$1/g, '@v');
    return db.prepare(text).all({ v: value }) as R[];
  } finally {
    db.close();
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

  async function stormThrough(label: string, fault: Fault, ledger: Ledger = 'postgres'): Promise<void> {
    if (server.process.exitCode !== null || server.process.signalCode !== null) await server.restart();
    const temp = tempTieredStore(ledger, {
      redis: server.url,
      ...(ledger === 'postgres' ? { ledgerParams: { poolSize: '6' } } : {}),
      fast: { chunk: '8', breakerMs: '300', recheckMs: '100', commandTimeoutMs: '500', grantTtlMs: '5000' },
    });
    const dibs: Dibs = await openDibs(temp.store);
    try {
      const sale = await dibs.sales.create({ sku: `FAULT-${label}`, startsAt: new Date().toISOString(), endsAt: new Date(Date.now() + HOUR).toISOString(), cap: CAP, perCustomerLimit: 1 });
      const ops: SaleOp[] = Array.from({ length: BUYERS }, (_, i) => ({ customer: `buyer-${i}`, kind: 'buy', quantity: 1, thinkMs: 0, delayMs: 15, ...(i % 2 === 0 ? { key: `buyer-${i}/checkout` } : {}) }));
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
          await fault(server);
          faulted = true;
        },
      });
      assert.ok(faulted, 'the fault landed while the storm was running');
      assert.equal(outcomes.length, BUYERS);
      const wrong = outcomes.filter((o) => o.status === 'error' && o.error !== 'sold_out');
      assert.deepEqual(wrong, [], 'buyers only ever hear sold_out: the ledger served them while Redis was away');

      // Every acknowledged order is durable in the ledger, once.
      const stored = new Map((await ledgerRows<{ id: string; customer: string }>(temp, 'SELECT id, customer FROM {orders} WHERE sale_id = $1', [sale.id])).map((r) => [r.id, r.customer]));
      const acknowledged = outcomes.filter((o) => o.status === 'ok');
      for (const o of acknowledged) assert.equal(stored.get(o.orderId!), o.customer, `acknowledged order ${o.orderId} is in the ledger`);
      let sold = (await dibs.sales.get(sale.id)).stats.sold;
      assert.ok(sold <= CAP, `sold ${sold} ≤ cap ${CAP}`);
      assert.equal(new Set(acknowledged.map((o) => o.orderId)).size, acknowledged.length);
      assert.deepEqual(await dibs.sales.audit(sale.id), [], 'audit clean, grants included');

      // Demand exceeded the cap: with Redis back, late buyers must find every unit the storm left
      // (none stranded in a grant Redis lost) — until the sale answers sold_out for good.
      if (server.process.exitCode !== null || server.process.signalCode !== null) await server.restart();
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
      const grants = await ledgerRows<{ open: number; escrow: number }>(temp, 'SELECT (SELECT count(*) FROM {grants} WHERE sale_id = $1 AND revoked_at IS NULL AND size > used) AS open, (SELECT escrow FROM {sales} WHERE id = $1) AS escrow', [sale.id]);
      assert.equal(sold, CAP, `sold = cap after the drain (storm sold ${acknowledged.length}, late buyers ${late}, grants ${JSON.stringify(grants[0])})`);
      assert.deepEqual(await dibs.sales.audit(sale.id), []);
    } finally {
      await dibs.close();
      await temp.drop();
    }
  }

  it('(a) Redis SIGKILLed mid-storm and left down: the ledger sells the rest, reclaiming the grants', async () => {
    await stormThrough('kill', (s) => s.kill());
  });

  it('(b) FLUSHALL mid-storm: lost grants are revoked and reconciled before anything is granted again', async () => {
    await stormThrough('flush', async (s) => {
      const client = new Redis(s.url);
      try {
        await client.flushall();
      } finally {
        client.disconnect();
      }
    });
  });

  const killAndRestart: Fault = async (s) => {
    await s.kill();
    await sleep(300);
    await s.restart();
  };

  it('(c) Redis SIGKILLed and restarted empty mid-storm', async () => {
    await stormThrough('restart', killAndRestart);
  });

  it('(c) the same over a SQLite ledger shared by the 4 processes', async () => {
    await stormThrough('restart-sqlite', killAndRestart, 'sqlite');
  });
});
