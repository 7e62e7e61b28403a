/**
 * The multi-process flash-sale storms, written once and run against every store that sells:
 * 1,000 buyers in 4 processes on the last 10 units, and holds racing confirmations,
 * cancellations and expiries with I3 sampled live (from the sale's stats and from full audits
 * taken mid-run, each in one snapshot of the store).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import type { Dibs } from '../../src/index.js';
import { runSaleStorm, spread, type SaleOp } from './sale-storm.js';

const HOUR = 3_600_000;

/** A store opened for the suite: `dibs` is valid inside tests, `store` (the URL) at once. */
export interface StormEnv {
  readonly dibs: Dibs;
  readonly store: string;
}

export interface SaleStormOptions {
  processes?: number;
  /** Buyers of the last 10 units (default 1,000), each 10th sending twice. */
  buyers?: number;
  /** Flows of the holds storm (default 400) and the customers they belong to (default 250). */
  flows?: number;
  customers?: number;
  /** Bound of one storm's worker processes (a hang guard, not a speed check). */
  timeoutMs?: number;
}

export function saleStormSuite(label: string, env: StormEnv, options: SaleStormOptions = {}): void {
  const { processes = 4, buyers = 1000, flows = 400, customers = 250, timeoutMs } = options;
  const bound = timeoutMs === undefined ? {} : { timeoutMs };

  describe(`${label}: sale storms across ${processes} processes`, () => {
    it(`${buyers.toLocaleString('en')} buyers on the last 10 units: exactly 10 sold, the rest sold_out, nobody over the limit`, async () => {
      const sale = await env.dibs.sales.create({
        sku: 'LAST-10',
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + HOUR).toISOString(),
        cap: 10,
        perCustomerLimit: 1,
      });
      const ops: SaleOp[] = [];
      for (let i = 0; i < buyers; i++) {
        const keyed = i % 2 === 0;
        const op: SaleOp = {
          customer: `buyer-${i}`,
          kind: 'buy',
          quantity: 1,
          thinkMs: 0,
          ...(keyed ? { key: `buyer-${i}/checkout` } : {}),
        };
        ops.push(op);
        if (i % 10 === 0) ops.push({ ...op }); // a retry (keyed) or a double click (unkeyed)
      }
      const outcomes = await runSaleStorm({ store: env.store, sale: sale.id, lanes: spread(ops, processes), ...bound });
      assert.equal(outcomes.length, ops.length);
      const orders = new Map<string, string>(); // order id -> customer
      const errors: Record<string, number> = {};
      for (const o of outcomes) {
        if (o.status === 'error') errors[o.error!] = (errors[o.error!] ?? 0) + 1;
        else orders.set(o.orderId!, o.customer);
      }
      assert.deepEqual(
        Object.keys(errors).filter((e) => e !== 'sold_out' && e !== 'limit_reached'),
        [],
        JSON.stringify(errors),
      );
      assert.equal(orders.size, 10, 'exactly the cap was sold (retries replayed the same order)');
      assert.equal(new Set(orders.values()).size, 10, 'ten different customers');
      const final = await env.dibs.sales.get(sale.id);
      assert.equal(final.stats.sold, 10);
      assert.equal(final.status, 'sold_out');
      assert.deepEqual(await env.dibs.sales.audit(sale.id), []);
    });

    it('holds racing confirmations, cancellations and expiries never exceed the cap (I3 sampled live)', async () => {
      const cap = 20;
      const sale = await env.dibs.sales.create({
        sku: 'HOLDS',
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + HOUR).toISOString(),
        cap,
        perCustomerLimit: 2,
      });
      const ops: SaleOp[] = [];
      const plans = ['confirm', 'cancel', 'abandon', 'confirm'] as const;
      for (let i = 0; i < flows; i++) {
        ops.push({
          customer: `c-${i % customers}`,
          kind: i % 7 === 0 ? 'buy' : 'reserve',
          quantity: 1 + (i % 2),
          then: plans[i % plans.length]!,
          thinkMs: i % 5 === 0 ? 1300 : 5,
        });
      }
      const samples: { sold: number; held: number }[] = [];
      const audits: unknown[][] = [];
      // A confirmation that is certainly too late, racing the storm: which of the storm's own holds
      // are confirmed late depends on who wins the stock (and so on the machine's load); this one does not.
      const lateHold = (await env.dibs.sales.reserve(sale.id, 'late-bird', 1, 1000)).hold;
      const reservedAt = Date.now();
      let lateConfirm = '';
      const outcomes = await runSaleStorm({
        store: env.store,
        sale: sale.id,
        lanes: spread(ops, processes),
        ttlMs: 1000,
        concurrency: 6,
        ...bound,
        during: async (done) => {
          const confirmLate = (async () => {
            await sleep(Math.max(0, reservedAt + 1300 - Date.now()));
            lateConfirm = await env.dibs.sales.confirm(lateHold.id).then(
              () => 'confirmed',
              (error: { code?: string }) => String(error.code),
            );
          })();
          while (!done()) {
            const { stats } = await env.dibs.sales.get(sale.id);
            samples.push({ sold: stats.sold, held: stats.held });
            // Every 10th sample a full audit (I2, I3, I4, I7 on the raw ledger, one snapshot).
            if (samples.length % 10 === 0) audits.push(await env.dibs.sales.audit(sale.id));
            await sleep(5);
          }
          await confirmLate;
        },
      });
      assert.ok(samples.length > 10, `sampled ${samples.length} times`);
      for (const s of samples) assert.ok(s.sold + s.held <= cap, `I3: sold ${s.sold} + held ${s.held} > cap ${cap}`);
      assert.ok(audits.length > 0, 'audited while the storm ran');
      assert.deepEqual(audits.flat(), [], 'every mid-run audit was clean');
      // A customer has one active hold per sale, so two of its flows can share a hold: one confirms
      // it and the other's cancel (or confirm after a cancel) is a `conflict`. Anything else is a bug.
      const expected = (o: (typeof outcomes)[number]) =>
        ['sold_out', 'limit_reached', 'hold_expired'].includes(o.error!) ||
        (o.error === 'conflict' && o.step !== 'reserve' && o.step !== 'buy');
      const unexpected = outcomes.filter((o) => o.status === 'error' && !expected(o));
      assert.deepEqual(unexpected, []);
      assert.equal(lateConfirm, 'hold_expired', 'a confirmation after the expiry is refused, storm or not');
      // On a slow store (the Firestore emulator on a loaded CI machine) a storm confirmation may take
      // longer than its 1 s hold: then a hold of our own, long enough, is confirmed after the checks below.
      const confirmedInStorm = outcomes.some((o) => o.step === 'confirm' && o.status === 'ok');
      if (!confirmedInStorm) console.log('# no storm confirmation made it in time: one of our own');
      // Every acknowledged order is counted, and nothing else is. Counted once per order: two flows
      // sharing a hold may both confirm it, and the later one is answered with the same order (replayed).
      const orders = new Map(
        outcomes
          .filter((o) => o.status === 'ok' && (o.step === 'buy' || o.step === 'confirm'))
          .map((o) => [o.orderId!, o.quantity]),
      );
      const soldUnits = [...orders.values()].reduce((sum, quantity) => sum + quantity, 0);
      await sleep(1100);
      await env.dibs.sales.expireHolds();
      const final = await env.dibs.sales.get(sale.id);
      assert.equal(final.stats.sold, soldUnits);
      assert.ok(final.stats.sold <= cap);
      assert.equal(final.stats.held, 0);
      assert.deepEqual(await env.dibs.sales.audit(sale.id), []);
      if (!confirmedInStorm) {
        if (final.stats.sold >= cap) await env.dibs.sales.update(sale.id, { cap: final.stats.sold + 1 });
        const { hold } = await env.dibs.sales.reserve(sale.id, 'confirm-probe', 1, 60_000);
        const { order } = await env.dibs.sales.confirm(hold.id);
        assert.equal(order.quantity, 1, 'a hold confirmed within its TTL becomes an order');
        assert.equal((await env.dibs.sales.get(sale.id)).stats.sold, final.stats.sold + 1);
        assert.deepEqual(await env.dibs.sales.audit(sale.id), []);
      }
    });
  });
}
