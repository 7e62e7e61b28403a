/**
 * Claims against a pool whose free codes are mostly not claimable now, from 4 OS processes, in two
 * waves: codes imported with a window that opens a moment later, codes on a short checkout hold,
 * and codes that never become claimable during the test (expired, opening in an hour, held for an
 * hour). The first wave runs while the short ones are still closed; the second after they are due,
 * so every process's claims bring the same due codes back at once. Afterwards: every claimable code
 * handed out exactly once (the storm verifier: I1, I2, I4, I5, the numbers, the audit), none of the
 * others, counts as they were, one low-stock event.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import type { Dibs } from '../../src/index.js';
import { verifyPool } from '../../src/loadtest/verify.js';
import { runClaimStorm } from './storm.js';

const OPEN = 200; // of which SHORT_HOLDS are held for a moment and LONG_HOLDS for an hour
const SHORT_HOLDS = 50;
const LONG_HOLDS = 20;
const OPENING = 200; // window opens a moment after the import
const EXPIRED = 100;
const LATER = 100; // window opens in an hour
const CLAIMABLE = OPEN - LONG_HOLDS + OPENING;
const TOTAL = OPEN + OPENING + EXPIRED + LATER;
const WAVE = 600; // claimants per wave: together more than CLAIMABLE

export function parkedStormSuite(label: string, temp: { readonly dibs: Dibs; readonly store: string }): void {
  describe(`${label}: claims from 4 processes while most free codes are outside their window or held`, {
    timeout: 180_000,
  }, () => {
    it(`the ${CLAIMABLE} claimable codes are handed out exactly once, the others never; counts and audit clean`, async () => {
      const { dibs, store } = temp;
      const pool = 'parked';
      const storeTime = async (ms = 0) => new Date(Date.parse(await dibs.backend.pools.clock()) + ms).toISOString();
      await dibs.pools.create({ name: pool, publicCodes: true, lowStockThreshold: 300 });
      const due = await storeTime(2500);
      const [expiredAt, later] = [await storeTime(-1000), await storeTime(3_600_000)];
      const code = (kind: string, n: number) => Array.from({ length: n }, (_, i) => `${kind}-${i}`);
      await dibs.pools.importCodes(pool, [
        ...code('OPEN', OPEN),
        ...code('OPENING', OPENING).map((c) => ({ code: c, startsAt: due })),
        ...code('EXPIRED', EXPIRED).map((c) => ({ code: c, expiresAt: expiredAt })),
        ...code('LATER', LATER).map((c) => ({ code: c, startsAt: later })),
      ]);
      for (let i = 0; i < SHORT_HOLDS; i++) await dibs.pools.hold(pool, `OPEN-${i}`, `checkout-${i}`, 2500);
      for (let i = SHORT_HOLDS; i < SHORT_HOLDS + LONG_HOLDS; i++)
        await dibs.pools.hold(pool, `OPEN-${i}`, `checkout-${i}`, 3_600_000);

      const storm = (claimantPrefix: string) =>
        runClaimStorm({
          store,
          pool,
          processes: 4,
          claimants: WAVE,
          claimantPrefix,
          repeatRatio: 0.1,
          retryRatio: 0.1,
        });
      const early = await storm('early');
      for (let i = 0; i < 200 && (await storeTime()) <= due; i++) await sleep(50); // waits on the store's clock, not a fixed time
      const late = await storm('late');

      const never = new Set([
        ...code('EXPIRED', EXPIRED),
        ...code('LATER', LATER),
        ...code('OPEN', SHORT_HOLDS + LONG_HOLDS).slice(SHORT_HOLDS),
      ]);
      const given = [...early, ...late].filter((o) => o.status === 'claimed').map((o) => o.code!);
      assert.deepEqual(
        given.filter((c) => never.has(c)),
        [],
        'no code outside its window or on a live hold was handed out',
      );
      assert.deepEqual(await dibs.pools.stats(pool), {
        total: TOTAL,
        free: TOTAL - CLAIMABLE,
        claimed: CLAIMABLE,
        redeemed: 0,
        revoked: 0,
      });
      const lowStock = (await dibs.pools.events({ pool })).filter((e) => e.type === 'pool.low_stock');
      assert.equal(lowStock.length, 1, 'one low-stock event for one crossing (closed codes count as free)');
      // The verifier counts every free code as supply; the never-claimable ones are revoked first
      // (all still free: checked above through the counts), so supply is exactly what was claimable.
      for (const c of never) await dibs.pools.revoke(pool, c);
      const { violations, summary } = await verifyPool(dibs, pool, [...early, ...late], {
        codes: CLAIMABLE,
        total: TOTAL,
        perClaimantLimit: 1,
      });
      assert.deepEqual(violations, [], violations.map((v) => v.message).join('\n'));
      assert.equal(summary.codesGiven, CLAIMABLE);
    });
  });
}
