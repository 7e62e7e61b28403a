/**
 * The multi-process cart storm, written once and run against every store that holds carts:
 * carts over three sales racing single buys of the same sales' last units, with keyed retries,
 * customers who buy and hold carts on the same sales (per-customer limits), and carts confirmed,
 * cancelled, kept and confirmed too late.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { checkCartStorm, runCartStorm, type CartOp } from './cart-storm.js';
import type { StormEnv } from './sale-storm-suite.js';
import type { Sale } from '../../src/index.js';

const HOUR = 3_600_000;
/**
 * The TTL of every cart but the late ones: longer than any storm runs, so a cart the record says
 * is held (kept, or its confirm or cancel answered unavailable) is still held when the checker
 * reads it. At 60 s a loaded machine's Firestore storm (193 s) outlived a kept cart, which the
 * store rightly showed expired.
 */
const HELD_TTL_MS = 30 * 60_000;
/** The carts' lines: which of the three sales each shape of cart holds. */
const SHAPES = [
  [0, 1, 2],
  [0, 1],
  [1, 2],
  [2, 0],
];

export function cartStormSuite(
  label: string,
  env: StormEnv,
  /** `skuTag`: a `{tag}` in front of every SKU (a Redis Cluster holds a cart's sales on one slot only so). */
  options: { processes?: number; carts?: number; skuTag?: string; concurrency?: number; timeoutMs?: number } = {},
): void {
  // the default suite's size; FAULTS_LONG=1 doubles it
  const {
    processes = 4,
    carts = process.env.FAULTS_LONG === '1' ? 160 : 80,
    skuTag = '',
    concurrency,
    timeoutMs,
  } = options;
  describe(`${label}: cart storm across ${processes} processes`, () => {
    it(`${carts} carts over 3 sales racing ${carts} single buys on the last units: no line oversold, no partial cart, limits kept`, async () => {
      // One early cart per process, planned to be confirmed (a customer of its own, a unit per
      // line), held before the start barrier: the storm's confirms race its buys and carts for sure.
      // Without them no cart might be held at all, the buys having taken every last unit first (1
      // run in 30 on Firestore at 20 carts). The cap is raised by their units, so the units the
      // storm races for are as many as before.
      const earlyShapes = Array.from({ length: processes }, (_, k) => SHAPES[k % SHAPES.length]!);
      const earlyUnits = Math.max(...[0, 1, 2].map((x) => earlyShapes.filter((shape) => shape.includes(x)).length));
      const cap = Math.max(4, Math.round(carts / 4)) + earlyUnits; // demand well above supply
      const perCustomerLimit = 2;
      const sales: Sale[] = [];
      for (const name of ['tee', 'mug', 'cap'])
        sales.push(
          await env.dibs.sales.create({
            sku: `${skuTag}${name}-${Date.now()}`,
            startsAt: new Date().toISOString(),
            endsAt: new Date(Date.now() + HOUR).toISOString(),
            cap,
            perCustomerLimit,
          }),
        );
      const shapes = SHAPES.map((shape) => shape.map((x) => sales[x]!.id));
      const early: CartOp[] = earlyShapes.map((shape, k) => ({
        customer: `e-${k}`,
        kind: 'cart',
        lines: shape.map((x) => ({ sale: sales[x]!.id, quantity: 1 })),
        then: 'confirm',
        ttlMs: HELD_TTL_MS,
        thinkMs: 20,
        early: true,
      }));
      const plans = ['confirm', 'cancel', 'keep', 'confirm', 'late', 'confirm'] as const;
      const ops: CartOp[] = [];
      for (let i = 0; i < carts; i++) {
        // 20 customers: each holds several carts and buys too, so limits and held lines are contended
        const customer = `c-${i % 20}`;
        const plan = plans[i % plans.length]!;
        const lines = shapes[i % shapes.length]!.map((sale, j) => ({ sale, quantity: j === 0 && i % 3 === 0 ? 2 : 1 }));
        const cart: CartOp = {
          customer,
          kind: 'cart',
          lines,
          then: plan,
          ttlMs: plan === 'late' ? 1000 : HELD_TTL_MS,
          thinkMs: i % 3 === 0 ? 50 : 5,
          ...(i % 4 === 0 ? { key: `cart-${i}` } : {}),
        };
        ops.push(cart);
        if (i % 8 === 0) ops.push({ ...cart }); // a keyed retry, or a double click
        ops.push({
          customer: i % 2 === 0 ? customer : `b-${i}`,
          kind: 'buy',
          lines: [{ sale: shapes[i % shapes.length]![i % 2]!, quantity: 1 }],
          ttlMs: 0,
          thinkMs: 0,
          ...(i % 3 === 0 ? { key: `buy-${i}` } : {}),
        });
      }
      const samples: number[] = [];
      const audits: unknown[] = [];
      const lanes: CartOp[][] = Array.from({ length: processes }, () => []);
      ops.forEach((op, i) => lanes[i % processes]!.push(op));
      early.forEach((op, k) => lanes[k]!.unshift(op));
      ops.push(...early);
      const outcomes = await runCartStorm({
        store: env.store,
        lanes,
        ...(concurrency === undefined ? {} : { concurrency }),
        ...(timeoutMs === undefined ? {} : { timeoutMs }),
        // I3 sampled live on every sale, with a full audit every 5th round
        during: async (done) => {
          while (!done()) {
            for (const sale of sales) {
              const { stats } = await env.dibs.sales.get(sale.id);
              samples.push(stats.sold + stats.held);
              if (samples.length % 15 === 0) audits.push(...(await env.dibs.sales.audit(sale.id)));
            }
            await sleep(10);
          }
        },
      });
      assert.ok(samples.length >= 3, `sampled ${samples.length} times`);
      for (const committed of samples) assert.ok(committed <= cap, `I3 live: sold + held = ${committed} > cap ${cap}`);
      assert.deepEqual(audits, [], 'every mid-run audit was clean');
      assert.equal(outcomes.filter((o) => o.step === 'hold' || o.step === 'buy').length, ops.length);
      const seen = await checkCartStorm(
        env.dibs,
        sales.map((s) => ({ id: s.id, cap, perCustomerLimit })),
        outcomes,
      );
      // the storm raced: carts and buys were both refused for stock, and both sold
      assert.ok(seen.refused['hold:sold_out']! > 0, JSON.stringify(seen));
      assert.ok(seen.refused['buy:sold_out']! > 0, JSON.stringify(seen));
      assert.ok(seen.carts.confirmed >= early.length && seen.buys > 0, JSON.stringify(seen));
      console.log(`# ${label} cart storm: ${JSON.stringify(seen)}`);
    });
  });
}
