/**
 * Multi-process flash-sale storm on the Firestore emulator, with the same harness as every other
 * store (support/sale-storm.ts): 4 OS processes, 400 buyers (plus retried keys and double clicks)
 * on the last 10 units, and holds racing confirmations, cancellations and expiries with I3 sampled
 * live (the storm suite's second case, smaller). Smaller than the 1,000 buyers of the SQL and Redis storms: the emulator
 * is one JVM and much slower than a real database. Nothing asserts speed; the duration is logged.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import type { FirestoreBackend } from '../../src/backends/firestore/index.js';
import { firestoreEmulatorInstalled, startFirestoreEmulator, type OwnedEmulator } from '../support/firestore.js';
import { runSaleStorm, spread, type SaleOp } from '../support/sale-storm.js';

const HOUR = 3_600_000;

describe('firestore emulator: sale storm across 4 processes', { skip: !firestoreEmulatorInstalled() }, () => {
  let emulator: OwnedEmulator;
  let store: string;
  let dibs: Dibs;
  before(async () => {
    emulator = await startFirestoreEmulator();
    store = emulator.storeUrl();
    dibs = await openDibs(store);
  });
  after(async () => {
    await dibs?.close();
    await emulator?.stop();
  });

  it('400 buyers on the last 10 units: exactly 10 sold, the rest sold_out, nobody over the limit', { timeout: 180_000 }, async () => {
    const sale = await dibs.sales.create({ sku: 'LAST-10', startsAt: new Date().toISOString(), endsAt: new Date(Date.now() + HOUR).toISOString(), cap: 10, perCustomerLimit: 1 });
    const ops: SaleOp[] = [];
    for (let i = 0; i < 400; i++) {
      const keyed = i % 2 === 0;
      const op: SaleOp = { customer: `buyer-${i}`, kind: 'buy', quantity: 1, thinkMs: 0, ...(keyed ? { key: `buyer-${i}/checkout` } : {}) };
      ops.push(op);
      if (i % 10 === 0) ops.push({ ...op }); // a retry (keyed) or a double click (unkeyed)
    }
    const started = Date.now();
    const outcomes = await runSaleStorm({ store, sale: sale.id, lanes: spread(ops, 4), timeoutMs: 150_000 });
    const ms = Date.now() - started;
    assert.equal(outcomes.length, ops.length);
    const orders = new Map<string, string>(); // order id -> customer
    const errors: Record<string, number> = {};
    for (const o of outcomes) {
      if (o.status === 'error') errors[o.error!] = (errors[o.error!] ?? 0) + 1;
      else orders.set(o.orderId!, o.customer);
    }
    console.log(`# firestore sale storm: ${ops.length} requests in 4 processes, ${ms} ms; answers ${JSON.stringify(errors)}, ${orders.size} orders`);
    assert.deepEqual(Object.keys(errors).filter((e) => e !== 'sold_out' && e !== 'limit_reached'), [], JSON.stringify(errors));
    assert.equal(orders.size, 10, 'exactly the cap was sold (retries replayed the same order)');
    assert.equal(new Set(orders.values()).size, 10, 'ten different customers');
    const final = await dibs.sales.get(sale.id);
    assert.equal(final.stats.sold, 10);
    assert.equal(final.status, 'sold_out');
    assert.deepEqual(await dibs.sales.audit(sale.id), []);
  });

  it('one process, 300 concurrent buyers on 30 units: transactions per buy (logged, not asserted)', { timeout: 180_000 }, async () => {
    const sale = await dibs.sales.create({ sku: 'ONE-PROCESS', startsAt: new Date().toISOString(), endsAt: new Date(Date.now() + HOUR).toISOString(), cap: 30, perCustomerLimit: 1 });
    const counters = (dibs.backend as FirestoreBackend).transactionCounters;
    const before = { ...counters };
    const started = Date.now();
    const settled = await Promise.allSettled(Array.from({ length: 300 }, (_, i) => dibs.sales.buy(sale.id, `c-${i}`)));
    const ms = Date.now() - started;
    const won = settled.filter((s) => s.status === 'fulfilled').length;
    const transactions = counters.transactions - before.transactions;
    const attempts = counters.attempts - before.attempts;
    console.log(`# firestore one-process burst: 300 buys in ${ms} ms, ${won} orders, ${transactions} read-write transactions, ${attempts} attempts`);
    assert.equal(won, 30);
    for (const s of settled) if (s.status === 'rejected') assert.equal((s.reason as { code: string }).code, 'sold_out');
    assert.deepEqual(await dibs.sales.audit(sale.id), []);
  });

  it('holds racing confirmations, cancellations and expiries never exceed the cap (I3 sampled live)', { timeout: 180_000 }, async () => {
    const cap = 20;
    const sale = await dibs.sales.create({ sku: 'HOLDS', startsAt: new Date().toISOString(), endsAt: new Date(Date.now() + HOUR).toISOString(), cap, perCustomerLimit: 2 });
    const ops: SaleOp[] = [];
    const plans = ['confirm', 'cancel', 'abandon', 'confirm'] as const;
    for (let i = 0; i < 200; i++) {
      ops.push({ customer: `c-${i % 120}`, kind: i % 7 === 0 ? 'buy' : 'reserve', quantity: 1 + (i % 2), then: plans[i % plans.length]!, thinkMs: i % 5 === 0 ? 1300 : 5 });
    }
    const samples: { sold: number; held: number }[] = [];
    const audits: unknown[][] = [];
    const started = Date.now();
    const outcomes = await runSaleStorm({
      store,
      sale: sale.id,
      lanes: spread(ops, 4),
      ttlMs: 1000,
      concurrency: 6,
      timeoutMs: 150_000,
      during: async (done) => {
        while (!done()) {
          const { stats } = await dibs.sales.get(sale.id);
          samples.push({ sold: stats.sold, held: stats.held });
          if (samples.length % 10 === 0) audits.push(await dibs.sales.audit(sale.id));
          await sleep(20);
        }
      },
    });
    const ms = Date.now() - started;
    const steps: Record<string, number> = {};
    for (const o of outcomes) steps[`${o.step}:${o.status === 'ok' ? 'ok' : o.error}`] = (steps[`${o.step}:${o.status === 'ok' ? 'ok' : o.error}`] ?? 0) + 1;
    console.log(`# firestore holds storm: ${ops.length} flows in 4 processes, ${ms} ms, ${samples.length} samples, ${audits.length} audits; ${JSON.stringify(steps)}`);
    assert.ok(samples.length > 10, `sampled ${samples.length} times`);
    for (const s of samples) assert.ok(s.sold + s.held <= cap, `I3: sold ${s.sold} + held ${s.held} > cap ${cap}`);
    assert.deepEqual(audits.flat(), [], 'every mid-run audit was clean');
    const expected = (o: (typeof outcomes)[number]) => ['sold_out', 'limit_reached', 'hold_expired'].includes(o.error!) || (o.error === 'conflict' && o.step !== 'reserve' && o.step !== 'buy');
    assert.deepEqual(outcomes.filter((o) => o.status === 'error' && !expected(o)), []);
    assert.ok(outcomes.some((o) => o.step === 'confirm' && o.status === 'ok'), 'some confirmations made it');
    const soldUnits = outcomes.filter((o) => o.status === 'ok' && (o.step === 'buy' || o.step === 'confirm')).reduce((sum, o) => sum + o.quantity, 0);
    await sleep(1100);
    await dibs.sales.expireHolds();
    const final = await dibs.sales.get(sale.id);
    assert.equal(final.stats.sold, soldUnits);
    assert.ok(final.stats.sold <= cap);
    assert.equal(final.stats.held, 0);
    assert.deepEqual(await dibs.sales.audit(sale.id), []);
  });
});
