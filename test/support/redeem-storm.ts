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
  describe(`${label}: ${CODES} codes redeemed ${ATTEMPTS} times each from ${PROCESSES} processes`, {
    timeout: 120_000,
  }, () => {
    it('each code is redeemed exactly once, for exactly one order; audit clean', async () => {
      const { dibs, store } = temp;
      await dibs.pools.create({ name: 'checkout' });
      await dibs.pools.importCodes(
        'checkout',
        Array.from({ length: CODES }, (_, i) => `R-${i}`),
      );
      const codes: string[] = [];
      for (let i = 0; i < CODES; i++) codes.push((await dibs.pools.claim('checkout', `buyer-${i}`)).code!);
      // the redeem storm rides on the sale-storm runner: `customer` carries the code, `key` the order
      const ops: SaleOp[] = codes.flatMap((code) =>
        Array.from({ length: ATTEMPTS }, (_, a) => ({
          customer: code,
          key: `order-${code}-${a}`,
          kind: 'buy' as const,
          quantity: 1,
          thinkMs: 0,
        })),
      );
      const lanes = Array.from({ length: PROCESSES }, (_, p) => ops.filter((_, i) => i % PROCESSES === p));
      const outcomes = await runSaleStorm<RedeemOutcome>({
        store,
        sale: 'checkout',
        lanes,
        concurrency: 8,
        worker: WORKER,
      });
      assert.equal(outcomes.length, CODES * ATTEMPTS, 'every attempt was answered');
      assert.deepEqual(
        [...new Set(outcomes.filter((o) => o.status === 'error').map((o) => o.error))].filter(
          (e) => e !== 'already_redeemed',
        ),
        [],
        'only already_redeemed refusals',
      );
      for (const code of codes) {
        const wins = outcomes.filter((o) => o.code === code && o.status === 'ok');
        assert.equal(
          new Set(wins.map((o) => o.orderId)).size,
          1,
          `${code}: exactly one order won (${wins.map((o) => o.orderId).join(', ')})`,
        );
        const stored = await dibs.pools.code('checkout', code);
        assert.equal(stored.status, 'redeemed');
        assert.equal(stored.orderId, wins[0]!.orderId, `${code}: the store names the winning order`);
      }
      assert.deepEqual(await dibs.pools.stats('checkout'), {
        total: CODES,
        free: 0,
        claimed: 0,
        redeemed: CODES,
        revoked: 0,
      });
      assert.deepEqual(await dibs.pools.audit('checkout'), []);
    });
  });

  describe(`${label}: a pool-wide redemption limit under ${PROCESSES} processes`, { timeout: 120_000 }, () => {
    it(`maxRedemptions ${CODES / 2} with ${CODES} holders redeeming at once: exactly ${CODES / 2} redeemed`, async () => {
      const { dibs, store } = temp;
      await dibs.pools.create({ name: 'capped', maxRedemptions: CODES / 2 });
      await dibs.pools.importCodes(
        'capped',
        Array.from({ length: CODES }, (_, i) => `M-${i}`),
      );
      const codes: string[] = [];
      for (let i = 0; i < CODES; i++) codes.push((await dibs.pools.claim('capped', `holder-${i}`)).code!);
      const ops: SaleOp[] = codes.map((code, i) => ({
        customer: code,
        key: `order-${i}`,
        kind: 'buy' as const,
        quantity: 1,
        thinkMs: 0,
      }));
      const lanes = Array.from({ length: PROCESSES }, (_, p) => ops.filter((_, i) => i % PROCESSES === p));
      const outcomes = await runSaleStorm<RedeemOutcome>({
        store,
        sale: 'capped',
        lanes,
        concurrency: 8,
        worker: WORKER,
      });
      assert.equal(outcomes.filter((o) => o.status === 'ok').length, CODES / 2, 'exactly the limit was redeemed');
      assert.deepEqual(
        [...new Set(outcomes.filter((o) => o.status === 'error').map((o) => o.error))],
        ['limit_reached'],
      );
      assert.equal((await dibs.pools.stats('capped')).redeemed, CODES / 2);
      assert.deepEqual(await dibs.pools.audit('capped'), []);
    });
  });

  describe(`${label}: ${CODES} public codes, each redeemed directly by ${ATTEMPTS} claimants from ${PROCESSES} processes`, {
    timeout: 120_000,
  }, () => {
    it('each code goes to exactly one redeemer, who becomes its holder; audit clean', async () => {
      const { dibs, store } = temp;
      await dibs.pools.create({ name: 'public', publicCodes: true, perClaimantLimit: CODES });
      const codes = Array.from({ length: CODES }, (_, i) => `P-${i}`);
      await dibs.pools.importCodes('public', codes);
      // 'confirm' marks a direct redeem (see redeem-worker.ts); the order id doubles as the claimant
      const ops: SaleOp[] = codes.flatMap((code) =>
        Array.from({ length: ATTEMPTS }, (_, a) => ({
          customer: code,
          key: `walkin-${a}`,
          kind: 'buy' as const,
          then: 'confirm' as const,
          quantity: 1,
          thinkMs: 0,
        })),
      );
      const lanes = Array.from({ length: PROCESSES }, (_, p) => ops.filter((_, i) => i % PROCESSES === p));
      const outcomes = await runSaleStorm<RedeemOutcome>({
        store,
        sale: 'public',
        lanes,
        concurrency: 8,
        worker: WORKER,
      });
      assert.equal(outcomes.length, CODES * ATTEMPTS);
      assert.deepEqual(
        [...new Set(outcomes.filter((o) => o.status === 'error').map((o) => o.error))].filter(
          (e) => e !== 'already_redeemed',
        ),
        [],
        'only already_redeemed refusals',
      );
      for (const code of codes) {
        const wins = outcomes.filter((o) => o.code === code && o.status === 'ok');
        assert.equal(wins.length, 1, `${code}: exactly one redeemer won`);
        const stored = await dibs.pools.code('public', code);
        assert.deepEqual(
          [stored.status, stored.claimant],
          ['redeemed', wins[0]!.holder],
          `${code}: the winner holds it`,
        );
      }
      assert.deepEqual(await dibs.pools.stats('public'), {
        total: CODES,
        free: 0,
        claimed: 0,
        redeemed: CODES,
        revoked: 0,
      });
      assert.deepEqual(await dibs.pools.audit('public'), []);
    });
  });

  describe(`${label}: checkout holds — ${CODES} public codes, each held then redeemed by ${ATTEMPTS} claimants from ${PROCESSES} processes`, {
    timeout: 180_000,
  }, () => {
    it('exactly one checkout per code holds and redeems it; the others are told held / already_redeemed; audit clean', async () => {
      const { dibs, store } = temp;
      await dibs.pools.create({ name: 'holds', publicCodes: true, perClaimantLimit: CODES });
      const codes = Array.from({ length: CODES }, (_, i) => `H-${i}`);
      await dibs.pools.importCodes('holds', codes);
      // kind 'reserve': hold (60 s) then redeem as the claimant named by the order id (redeem-worker.ts)
      const ops: SaleOp[] = codes.flatMap((code) =>
        Array.from({ length: ATTEMPTS }, (_, a) => ({
          customer: code,
          key: `cart-${a}`,
          kind: 'reserve' as const,
          then: 'confirm' as const,
          quantity: 1,
          thinkMs: 0,
        })),
      );
      const lanes = Array.from({ length: PROCESSES }, (_, p) => ops.filter((_, i) => i % PROCESSES === p));
      const outcomes = await runSaleStorm<RedeemOutcome>({
        store,
        sale: 'holds',
        lanes,
        concurrency: 8,
        worker: WORKER,
        timeoutMs: 170_000,
      });
      assert.equal(outcomes.length, CODES * ATTEMPTS, 'every attempt was answered');
      const refusals = new Set(outcomes.filter((o) => o.status === 'error').map((o) => o.error));
      assert.deepEqual(
        [...refusals].filter((e) => e !== 'held' && e !== 'already_redeemed'),
        [],
        `only held / already_redeemed refusals (${[...refusals].join(', ')})`,
      );
      for (const code of codes) {
        const wins = outcomes.filter((o) => o.code === code && o.status === 'ok');
        assert.equal(wins.length, 1, `${code}: exactly one checkout won`);
        const stored = await dibs.pools.code('holds', code);
        assert.deepEqual(
          [stored.status, stored.claimant, stored.hold ?? null],
          ['redeemed', wins[0]!.holder, null],
          `${code}: the winner holds it, the hold is consumed`,
        );
      }
      assert.deepEqual(await dibs.pools.stats('holds'), {
        total: CODES,
        free: 0,
        claimed: 0,
        redeemed: CODES,
        revoked: 0,
      });
      assert.deepEqual(await dibs.pools.audit('holds'), []);
    });
  });

  const USES = 1000;
  const REDEEMERS = 5000;
  const RETRIED = 500;
  describe(`${label}: a multi-use code with ${USES} uses under ${REDEEMERS} concurrent redeemers from ${PROCESSES} processes`, {
    timeout: 300_000,
  }, () => {
    it(`exactly ${USES} uses, once per order (${RETRIED} checkouts retried); the rest limit_reached; audit clean`, async () => {
      const { dibs, store } = temp;
      await dibs.pools.create({ name: 'welcome' });
      await dibs.pools.addMultiUseCode('welcome', { code: 'WELCOME10', uses: USES });
      // each redeemer is its own claimant and order; the first RETRIED checkouts are sent twice
      const op = (i: number): SaleOp => ({
        customer: 'WELCOME10',
        key: `buyer-${i}`,
        kind: 'buy',
        then: 'confirm',
        quantity: 1,
        thinkMs: 0,
      });
      const ops = [
        ...Array.from({ length: REDEEMERS }, (_, i) => op(i)),
        ...Array.from({ length: RETRIED }, (_, i) => op(i)),
      ];
      const lanes = Array.from({ length: PROCESSES }, (_, p) => ops.filter((_, i) => i % PROCESSES === p));
      const outcomes = await runSaleStorm<RedeemOutcome>({
        store,
        sale: 'welcome',
        lanes,
        concurrency: 8,
        worker: WORKER,
        timeoutMs: 290_000,
      });
      assert.equal(outcomes.length, REDEEMERS + RETRIED, 'every attempt was answered');
      assert.deepEqual(
        [...new Set(outcomes.filter((o) => o.status === 'error').map((o) => o.error))],
        ['limit_reached'],
        'only limit_reached refusals',
      );
      const won = new Set(outcomes.filter((o) => o.status === 'ok').map((o) => o.orderId));
      assert.equal(won.size, USES, `exactly ${USES} orders used the code`);
      for (let i = 0; i < RETRIED; i++) {
        const both = outcomes.filter((o) => o.orderId === `buyer-${i}`);
        assert.equal(both.length, 2);
        assert.equal(both[0]!.status, both[1]!.status, `buyer-${i}: a retried checkout gets the same answer`);
      }
      const stored = await dibs.pools.code('welcome', 'WELCOME10');
      assert.deepEqual(stored.uses, { max: USES, used: USES, remaining: 0, perClaimant: 1 });
      assert.deepEqual(await dibs.pools.audit('welcome'), []);
    });
  });
}
