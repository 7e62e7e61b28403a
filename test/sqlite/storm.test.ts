/**
 * Multi-process invariant tests on one shared SQLite file: 4 OS processes, 10,000 claimants
 * (with double clicks and retried idempotency keys) against 5,000 codes.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { sqliteForSuite } from '../support/sqlite.js';
import { assertStormInvariants, runClaimStorm } from '../support/storm.js';

describe('sqlite: 4 processes share one file', () => {
  const temp = sqliteForSuite();

  for (const perClaimantLimit of [1, 3]) {
    it(`10,000 claimants vs 5,000 codes, limit ${perClaimantLimit}: exactly-once, audit clean`, async () => {
      const pool = `storm-limit-${perClaimantLimit}`;
      await temp.dibs.pools.create({ name: pool, perClaimantLimit, lowStockThreshold: 100 });
      await temp.dibs.pools.importCodes(
        pool,
        Array.from({ length: 5000 }, (_, i) => `CODE-${i}`),
      );
      const outcomes = await runClaimStorm({
        store: temp.store,
        pool,
        processes: 4,
        claimants: perClaimantLimit === 1 ? 10_000 : 2_500,
        claimsPerClaimant: perClaimantLimit === 1 ? 1 : 3,
        repeatRatio: 0.1,
        retryRatio: 0.1,
      });
      const summary = await assertStormInvariants(temp.dibs, pool, outcomes, { codes: 5000, perClaimantLimit });
      assert.equal(summary.codesGiven, 5000);
      assert.ok(summary.soldOut > 0, 'demand exceeded supply, so someone heard sold_out');
      assert.ok(summary.replayed > 0 || summary.alreadyHeld > 0, 'retries and double clicks were exercised');
      const lowStock = (await temp.dibs.pools.events({ pool })).filter((e) => e.type === 'pool.low_stock');
      assert.equal(lowStock.length, 1, 'one low-stock event for one crossing, across processes');
    });
  }
});
