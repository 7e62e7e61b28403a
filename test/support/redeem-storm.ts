/**
 * The redemption storm, run per store: 100 claimed single-use codes, each redeemed 10 times for 10
 * different orders from 4 OS processes at once (a checkout retried on every instance, or a leaked
 * code tried by many). Afterwards each code was redeemed exactly once: exactly one order per code
 * was told "ok" (retries of that same order would be too), every other attempt `already_redeemed`,
 * the store names the winning order, counters and audit agree.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { Dibs } from '../../src/index.js';
import { runSaleStorm, type SaleOp } from './sale-storm.js';

export interface RedeemOutcome {
  code: string;
  orderId: string;
  status: 'ok' | 'error';
  storedOrder?: string | null;
  holder?: string | null;
  error?: string;
}

const WORKER = new URL('./redeem-worker.ts', import.meta.url).pathname;
const CODES = 100;
const ATTEMPTS = 10;
const PROCESSES = 4;

export function redeemStormSuite(label: string, temp: { readonly dibs: Dibs; readonly store: string }): void {
  describe(`${label}: ${CODES} codes redeemed ${ATTEMPTS} times each from ${PROCESSES} processes`, { timeout: 120_000 }, () => {
    it('each code is redeemed exactly once, for exactly one order; audit clean', async () => {
      const { dibs, store } = temp;
      await dibs.pools.create({ name: 'checkout' });
      await dibs.pools.importCodes('checkout', Array.from({ length: CODES }, (_, i) => `R-${i}`));
      const codes: string[] = [];
      for (let i = 0; i < CODES; i++) codes.push((await dibs.pools.claim('checkout', `buyer-${i}`)).code!);
      // the redeem storm rides on the sale-storm runner: `customer` carries the code, `key` the order
      const ops: SaleOp[] = codes.flatMap((code) => Array.from({ length: ATTEMPTS }, (_, a) => ({ customer: code, key: `order-${code}-${a}`, kind: 'buy' as const, quantity: 1, thinkMs: 0 })));
      const lanes = Array.from({ length: PROCESSES }, (_, p) => ops.filter((_, i) => i % PROCESSES === p));
      const outcomes = await runSaleStorm<RedeemOutcome>({ store, sale: 'checkout', lanes, concurrency: 8, worker: WORKER });
      assert.equal(outcomes.length, CODES * ATTEMPTS, 'every attempt was answered');
      assert.deepEqual([...new Set(outcomes.filter((o) => o.status === 'error').map((o) => o.error))].filter((e) => e !== 'already_redeemed'), [], 'only already_redeemed refusals');
      for (const code of codes) {
        const wins = outcomes.filter((o) => o.code === code && o.status === 'ok');
        assert.equal(new Set(wins.map((o) => o.orderId)).size, 1, `${code}: exactly one order won (${wins.map((o) => o.orderId).join(', ')})`);
        const stored = await dibs.pools.code('checkout', code);
        assert.equal(stored.status, 'redeemed');
        assert.equal(stored.orderId, wins[0]!.orderId, `${code}: the store names the winning order`);
      }
      assert.deepEqual(await dibs.pools.stats('checkout'), { total: CODES, free: 0, claimed: 0, redeemed: CODES, revoked: 0 });
      assert.deepEqual(await dibs.pools.audit('checkout'), []);
    });
  });

  describe(`${label}: a pool-wide redemption limit under ${PROCESSES} processes`, { timeout: 120_000 }, () => {
    it(`maxRedemptions ${CODES / 2} with ${CODES} holders redeeming at once: exactly ${CODES / 2} redeemed`, async () => {
      const { dibs, store } = temp;
      await dibs.pools.create({ name: 'capped', maxRedemptions: CODES / 2 });
      await dibs.pools.importCodes('capped', Array.from({ length: CODES }, (_, i) => `M-${i}`));
      const codes: string[] = [];
      for (let i = 0; i < CODES; i++) codes.push((await dibs.pools.claim('capped', `holder-${i}`)).code!);
      const ops: SaleOp[] = codes.map((code, i) => ({ customer: code, key: `order-${i}`, kind: 'buy' as const, quantity: 1, thinkMs: 0 }));
      const lanes = Array.from({ length: PROCESSES }, (_, p) => ops.filter((_, i) => i % PROCESSES === p));
      const outcomes = await runSaleStorm<RedeemOutcome>({ store, sale: 'capped', lanes, concurrency: 8, worker: WORKER });
      assert.equal(outcomes.filter((o) => o.status === 'ok').length, CODES / 2, 'exactly the limit was redeemed');
      assert.deepEqual([...new Set(outcomes.filter((o) => o.status === 'error').map((o) => o.error))], ['limit_reached']);
      assert.equal((await dibs.pools.stats('capped')).redeemed, CODES / 2);
      assert.deepEqual(await dibs.pools.audit('capped'), []);
    });
  });

  describe(`${label}: ${CODES} public codes, each redeemed directly by ${ATTEMPTS} claimants from ${PROCESSES} processes`, { timeout: 120_000 }, () => {
    it('each code goes to exactly one redeemer, who becomes its holder; audit clean', async () => {
      const { dibs, store } = temp;
      await dibs.pools.create({ name: 'public', publicCodes: true, perClaimantLimit: CODES });
      const codes = Array.from({ length: CODES }, (_, i) => `P-${i}`);
      await dibs.pools.importCodes('public', codes);
      // 'confirm' marks a direct redeem (see redeem-worker.ts); the order id doubles as the claimant
      const ops: SaleOp[] = codes.flatMap((code) => Array.from({ length: ATTEMPTS }, (_, a) => ({ customer: code, key: `walkin-${a}`, kind: 'buy' as const, then: 'confirm' as const, quantity: 1, thinkMs: 0 })));
      const lanes = Array.from({ length: PROCESSES }, (_, p) => ops.filter((_, i) => i % PROCESSES === p));
      const outcomes = await runSaleStorm<RedeemOutcome>({ store, sale: 'public', lanes, concurrency: 8, worker: WORKER });
      assert.equal(outcomes.length, CODES * ATTEMPTS);
      assert.deepEqual([...new Set(outcomes.filter((o) => o.status === 'error').map((o) => o.error))].filter((e) => e !== 'already_redeemed'), [], 'only already_redeemed refusals');
      for (const code of codes) {
        const wins = outcomes.filter((o) => o.code === code && o.status === 'ok');
        assert.equal(wins.length, 1, `${code}: exactly one redeemer won`);
        const stored = await dibs.pools.code('public', code);
        assert.deepEqual([stored.status, stored.claimant], ['redeemed', wins[0]!.holder], `${code}: the winner holds it`);
      }
      assert.deepEqual(await dibs.pools.stats('public'), { total: CODES, free: 0, claimed: 0, redeemed: CODES, revoked: 0 });
      assert.deepEqual(await dibs.pools.audit('public'), []);
    });
  });
}
