/**
 * Multi-process invariant tests on PostgreSQL: 4 OS processes, 10,000 claimants (with double
 * clicks and retried idempotency keys) against 5,000 codes — the reference scenario — with grouped
 * claims on and off, limit 1, with and without a low-stock threshold (which switches claims to the
 * settling path). The limit-3 cases race as hard (same processes and concurrency) on a smaller pool:
 * 600 claimants asking 3 times each for 1,000 codes; the size adds minutes, not contention.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { requirePostgres, tempPgStore } from '../support/postgres.js';
import { assertStormInvariants, runClaimStorm } from '../support/storm.js';

const skip = await requirePostgres();

const CASES = [
  { perClaimantLimit: 1, grouped: true, lowStockThreshold: 100 },
  { perClaimantLimit: 1, grouped: false, lowStockThreshold: null },
  { perClaimantLimit: 3, grouped: true, lowStockThreshold: null },
  { perClaimantLimit: 3, grouped: false, lowStockThreshold: 100 },
] as const;

describe('postgres: 4 processes, one schema', { skip }, () => {
  for (const c of CASES) {
    describe(`grouped=${c.grouped}`, () => {
      const temp = tempPgStore({ grouped: String(c.grouped), poolSize: '4' });
      let dibs: Dibs;
      before(async () => {
        dibs = await openDibs(temp.store);
      });
      after(async () => {
        await dibs?.close();
        await temp.drop();
      });

      it(`${c.perClaimantLimit === 1 ? '10,000 claimants vs 5,000' : '600 claimants × 3 vs 1,000'} codes, limit ${c.perClaimantLimit}, threshold ${c.lowStockThreshold}: exactly-once, audit clean`, async () => {
        const pool = `storm-${c.perClaimantLimit}`;
        await dibs.pools.create({
          name: pool,
          perClaimantLimit: c.perClaimantLimit,
          lowStockThreshold: c.lowStockThreshold,
        });
        const codes = c.perClaimantLimit === 1 ? 5000 : 1000;
        await dibs.pools.importCodes(
          pool,
          Array.from({ length: codes }, (_, i) => `CODE-${i}`),
        );
        const outcomes = await runClaimStorm({
          store: temp.store,
          pool,
          processes: 4,
          claimants: c.perClaimantLimit === 1 ? 10_000 : 600,
          claimsPerClaimant: c.perClaimantLimit,
          repeatRatio: 0.1,
          retryRatio: 0.1,
          concurrency: 16,
        });
        const summary = await assertStormInvariants(dibs, pool, outcomes, {
          codes,
          perClaimantLimit: c.perClaimantLimit,
        });
        assert.equal(summary.codesGiven, codes);
        assert.ok(summary.soldOut > 0, 'demand exceeded supply, so someone heard sold_out');
        assert.ok(summary.replayed > 0 || summary.alreadyHeld > 0, 'retries and double clicks were exercised');
        const lowStock = (await dibs.pools.events({ pool })).filter((e) => e.type === 'pool.low_stock');
        assert.equal(
          lowStock.length,
          c.lowStockThreshold === null ? 0 : 1,
          'one low-stock event per crossing, across processes',
        );
      });
    });
  }
});
