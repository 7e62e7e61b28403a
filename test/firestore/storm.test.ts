/**
 * Multi-process invariant test on the Firestore emulator, with the same harness as every other
 * store: 4 OS processes, 1,000 claimants (double clicks, retried keys) vs 500 codes, then the
 * product's verifier and the store's own audit. (Smaller than the 10,000 vs 5,000 of the SQL and
 * Redis storms: the emulator is a single JVM and much slower than a real database. Half the 2,000
 * vs 1,000 it was: 64 claims in flight at once still contend for the same free-code groups all
 * the storm long, and twice the claimants per code still sells out; the rules are the same ones
 * the SQL and Redis storms prove at scale.)
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';
import { assertStormInvariants, runClaimStorm } from '../support/storm.js';

describe('firestore emulator: 4 processes', { skip: !firestoreEmulatorInstalled() }, () => {
  const emulator = firestoreForSuite();

  it('1,000 claimants vs 500 codes, limit 1, threshold 50', { timeout: 600_000 }, async () => {
    const store = emulator.storeUrl();
    const pool = 'storm';
    const dibs = await openDibs(store);
    try {
      await dibs.pools.create({ name: pool, perClaimantLimit: 1, lowStockThreshold: 50 });
      await dibs.pools.importCodes(
        pool,
        Array.from({ length: 500 }, (_, i) => `CODE-${i}`),
      );
      const outcomes = await runClaimStorm({
        store,
        pool,
        processes: 4,
        claimants: 1000,
        concurrency: 16,
        // Every Firestore step answers within 30 s, `unavailable` if contention kept it from
        // committing; on a loaded machine the emulator keeps a few groups losing that long (16 of
        // 2,000 claims in one CI run), and a client retries them as the answer says.
        retryUnavailable: 3,
        timeoutMs: 480_000,
      });
      const summary = await assertStormInvariants(dibs, pool, outcomes, { codes: 500, perClaimantLimit: 1 });
      assert.equal(summary.codesGiven, 500);
      assert.equal((await dibs.pools.events({ pool })).filter((e) => e.type === 'pool.low_stock').length, 1);
    } finally {
      await dibs.close();
    }
  });
});
