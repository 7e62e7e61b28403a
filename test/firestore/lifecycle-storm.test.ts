/**
 * Checkout holds and per-code windows under 4 OS processes on the Firestore emulator. A public pool
 * with 50 codes imported with their windows: 20 open, 10 expired, 10 opening and 10 closing 2 s
 * after the import (by the store clock). Two phases (before and after that instant) of 40 claims
 * plus one hold-then-redeem checkout per code, all processes at once; then the audit: no code went
 * to two claimants, no code was handed out or redeemed outside its window (judged by the stored
 * server times), every acknowledged claim, hold and redemption is in the store, the codes that
 * opened were brought back into the claims, counters and the store's audit agree.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';
import type { LifecycleOutcome } from '../support/lifecycle-worker.js';
import { runSaleStorm, spread, type SaleOp } from '../support/sale-storm.js';

const WORKER = new URL('../support/lifecycle-worker.ts', import.meta.url).pathname;
const PROCESSES = 4;
// Half of what this once ran (100 codes, 80 claims a phase, 200 redeemers of 50 uses): the same
// ratios of claims to codes, so each phase still runs its codes dry and races holds against claims,
// in half the time on the emulator.
const CLAIMS_PER_PHASE = 40;
const SWITCH_MS = 2000;

const group = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
const OPEN = group('O', 20);
const GONE = group('X', 10);
const LATE = group('L', 10);
const CLOSING = group('C', 10);
const ALL = [...OPEN, ...GONE, ...LATE, ...CLOSING];

/** Refusals a step may answer here; anything else is a defect. */
const EXPECTED: Record<LifecycleOutcome['step'], string[]> = {
  claim: ['sold_out'],
  hold: ['held', 'conflict', 'expired', 'not_yet_valid', 'already_redeemed'],
  // the hold is the claimant's for 60 s: only a window that closed in between can refuse
  redeem: ['expired'],
};

describe('firestore emulator: holds and windows from 4 processes', { skip: !firestoreEmulatorInstalled() }, () => {
  const emulator = firestoreForSuite();

  it('no code twice, none outside its window, every acknowledged step kept; audit clean', {
    timeout: 600_000,
  }, async () => {
    const store = emulator.storeUrl();
    const pool = 'life';
    const dibs = await openDibs(store);
    try {
      const storeTime = async (ms = 0) => new Date(Date.parse(await dibs.backend.pools.clock()) + ms).toISOString();
      await dibs.pools.create({ name: pool, publicCodes: true, perClaimantLimit: 1 });
      const [gone, switchAt] = await Promise.all([storeTime(-1000), storeTime(SWITCH_MS)]);
      const imported = await dibs.pools.importCodes(pool, [
        ...OPEN,
        ...GONE.map((code) => ({ code, expiresAt: gone })),
        ...LATE.map((code) => ({ code, startsAt: switchAt })),
        ...CLOSING.map((code) => ({ code, expiresAt: switchAt })),
      ]);
      assert.deepEqual(imported, { imported: ALL.length, duplicates: 0, invalid: 0 });

      const phase = (n: number): SaleOp[] => {
        const claims = Array.from(
          { length: CLAIMS_PER_PHASE },
          (_, i): SaleOp => ({ customer: '', key: `c${n}-${i}`, kind: 'buy', quantity: 1, thinkMs: 0 }),
        );
        const holds = ALL.map(
          (code): SaleOp => ({ customer: code, key: `h${n}-${code}`, kind: 'reserve', quantity: 1, thinkMs: 0 }),
        );
        // interleaved, so claims and checkouts race for the same codes
        return claims
          .flatMap((c, i) => [c, ...holds.slice(i * 2, i * 2 + 2)])
          .concat(holds.slice(CLAIMS_PER_PHASE * 2));
      };
      const storm = (ops: SaleOp[]) =>
        runSaleStorm<LifecycleOutcome>({
          store,
          sale: pool,
          lanes: spread(ops, PROCESSES),
          concurrency: 4,
          worker: WORKER,
          timeoutMs: 270_000,
        });

      const started = Date.now();
      const first = await storm(phase(1));
      for (let i = 0; i < 200 && (await storeTime()) <= switchAt; i++) await sleep(50);
      const second = await storm(phase(2));
      const stormMs = Date.now() - started;
      const outcomes = [...first, ...second];
      assert.equal(
        outcomes.filter((o) => o.step !== 'redeem').length,
        2 * (CLAIMS_PER_PHASE + ALL.length),
        'every claim and hold was answered',
      );

      for (const o of outcomes.filter((o) => o.status === 'error'))
        assert.ok(
          EXPECTED[o.step].includes(o.error!),
          `${o.step} of ${o.code ?? 'a code'} by ${o.claimant}: unexpected ${o.error}`,
        );

      // who got each code: a claim that answered it, or a checkout whose redeem went through
      const winners = new Map<string, string[]>();
      for (const o of outcomes) {
        if (o.status !== 'ok' || o.step === 'hold') continue;
        winners.set(o.code!, [...(winners.get(o.code!) ?? []), o.claimant]);
      }
      const stored = new Map((await Promise.all(ALL.map((c) => dibs.pools.code(pool, c)))).map((c) => [c.code, c]));
      for (const [code, who] of winners) {
        assert.equal(who.length, 1, `${code} went to one claimant, not ${who.join(', ')}`);
        const info = stored.get(code)!;
        assert.equal(info.claimant, who[0], `${code}: the store names its winner`);
        const at = info.claimedAt!;
        assert.ok(!GONE.includes(code), `${code}: an expired code was handed out`);
        if (LATE.includes(code))
          assert.ok(at >= switchAt, `${code}: handed out at ${at}, before its window opened at ${switchAt}`);
        if (CLOSING.includes(code))
          assert.ok(at < switchAt, `${code}: handed out at ${at}, after its window closed at ${switchAt}`);
      }
      for (const o of outcomes.filter((o) => o.step === 'redeem')) {
        const info = stored.get(o.code!)!;
        if (o.status === 'ok')
          assert.deepEqual(
            [info.status, info.claimant, info.hold ?? null],
            ['redeemed', o.claimant, null],
            `${o.code}: redeemed by its checkout, hold consumed`,
          );
        else
          assert.equal(
            info.hold?.claimant,
            o.claimant,
            `${o.code}: the acknowledged hold of ${o.claimant} is still there`,
          );
      }
      // the codes that opened were brought back: once a claim of phase 2 found none left, every
      // open code (plain or late) is taken or held
      const soldOutLate = second.some((o) => o.step === 'claim' && o.error === 'sold_out');
      assert.ok(soldOutLate, 'phase 2 ran the pool dry (else this test proves less than it says)');
      for (const code of [...OPEN, ...LATE]) {
        const info = stored.get(code)!;
        assert.ok(
          info.status !== 'free' || info.hold,
          `${code} is still free and unheld after claims answered sold_out`,
        );
      }
      const given = [...winners.values()].length;
      const stats = await dibs.pools.stats(pool);
      assert.equal(stats.claimed + stats.redeemed, given);
      assert.equal(stats.total, ALL.length);
      assert.deepEqual(await dibs.pools.audit(pool), []);
      const count = (step: string, status = 'ok') =>
        outcomes.filter((o) => o.step === step && o.status === status).length;
      console.log(
        `lifecycle storm: ${outcomes.length} outcomes in ${stormMs} ms; claims ok ${count('claim')}, holds ok ${count('hold')}, redeems ok ${count('redeem')}, redeems refused ${count('redeem', 'error')}`,
      );
    } finally {
      await dibs.close();
    }
  });

  const USES = 25;
  const REDEEMERS = 100;
  const RETRIED = 20;
  it(`a multi-use code with ${USES} uses, ${REDEEMERS} redeemers (${RETRIED} retried) from ${PROCESSES} processes: exactly ${USES} uses, once per order`, {
    timeout: 300_000,
  }, async () => {
    const store = emulator.storeUrl();
    const pool = 'welcome';
    const dibs = await openDibs(store);
    try {
      await dibs.pools.create({ name: pool });
      await dibs.pools.addMultiUseCode(pool, { code: 'WELCOME', uses: USES });
      // each redeemer is its own claimant and order; the first RETRIED checkouts are sent twice
      const op = (i: number): SaleOp => ({
        customer: 'WELCOME',
        key: `buyer-${i}`,
        kind: 'buy',
        quantity: 1,
        thinkMs: 0,
      });
      const ops = [
        ...Array.from({ length: REDEEMERS }, (_, i) => op(i)),
        ...Array.from({ length: RETRIED }, (_, i) => op(i)),
      ];
      const started = Date.now();
      const outcomes = await runSaleStorm<LifecycleOutcome>({
        store,
        sale: pool,
        lanes: spread(ops, PROCESSES),
        concurrency: 4,
        worker: WORKER,
        timeoutMs: 280_000,
      });
      const stormMs = Date.now() - started;
      assert.equal(outcomes.length, REDEEMERS + RETRIED, 'every attempt was answered');
      assert.deepEqual(
        [...new Set(outcomes.filter((o) => o.status === 'error').map((o) => o.error))],
        ['limit_reached'],
        'only limit_reached refusals',
      );
      const won = new Set(outcomes.filter((o) => o.status === 'ok').map((o) => o.claimant));
      assert.equal(won.size, USES, `exactly ${USES} orders used the code`);
      for (let i = 0; i < RETRIED; i++) {
        const both = outcomes.filter((o) => o.claimant === `buyer-${i}`);
        assert.equal(both.length, 2);
        assert.equal(both[0]!.status, both[1]!.status, `buyer-${i}: a retried checkout gets the same answer`);
      }
      assert.deepEqual((await dibs.pools.code(pool, 'WELCOME')).uses, {
        max: USES,
        used: USES,
        remaining: 0,
        perClaimant: 1,
      });
      assert.deepEqual(await dibs.pools.audit(pool), []);
      console.log(`multi-use storm: ${outcomes.length} redeems in ${stormMs} ms`);
    } finally {
      await dibs.close();
    }
  });
});
