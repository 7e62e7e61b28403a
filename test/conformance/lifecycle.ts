/**
 * The rest of the coupon lifecycle, run unchanged against every store: checkout holds,
 * a code's own validity window, multi-use codes — each with its edges (a hold that expires, the
 * window boundary exactly at expiry, retries per order, refunds), and a clean audit after each.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { Dibs } from '../../src/index.js';
import { rejectsWith } from '../support/assert.js';
import type { ConformanceTarget } from './pools.js';

export function lifecycleConformance(label: string, open: () => Promise<ConformanceTarget>): void {
  describe(`${label}: coupon lifecycle`, () => {
    let target: ConformanceTarget;
    let dibs: Dibs;
    let n = 0;
    const fresh = async (options: { codes?: number; publicCodes?: boolean; perClaimantLimit?: number } = {}) => {
      const name = `life-${++n}`;
      await dibs.pools.create({
        name,
        publicCodes: options.publicCodes ?? false,
        perClaimantLimit: options.perClaimantLimit ?? 1,
      });
      if (options.codes)
        await dibs.pools.importCodes(
          name,
          Array.from({ length: options.codes }, (_, i) => `L${i + 1}`),
        );
      return name;
    };
    /** The store's clock, shifted by `ms`: windows are judged by it, not by this process's clock. */
    const storeTime = async (ms = 0) => new Date(Date.parse(await dibs.backend.pools.clock()) + ms).toISOString();
    /** Waits until the store's clock has passed `at` (waits on state, not a fixed sleep). */
    const untilStorePasses = async (at: string) => {
      for (let i = 0; i < 200 && (await storeTime()) <= at; i++)
        await sleep(Math.max(20, Math.min(500, Date.parse(at) - Date.now() + 20)));
    };

    before(async () => {
      target = await open();
      dibs = target.dibs;
    });
    after(async () => {
      await target?.cleanup();
    });

    describe('checkout holds', () => {
      it('a held public code cannot be redeemed or held by another checkout; the holder redeems it and the hold is consumed', async () => {
        const name = await fresh({ codes: 2, publicCodes: true });
        const held = await dibs.pools.hold(name, 'L1', 'alice', 60_000);
        assert.equal(held.hold?.claimant, 'alice');
        assert.ok(Date.parse(held.hold!.expiresAt) > Date.parse(await storeTime()), 'expires in the future');
        await rejectsWith(dibs.pools.redeem(name, 'L1', { claimant: 'bob', orderId: 'o-bob' }), 'held');
        await rejectsWith(dibs.pools.hold(name, 'L1', 'bob', 60_000), 'held');
        const check = await dibs.pools.validate(name, 'L1', { claimant: 'bob' });
        assert.equal(check.valid === false && check.reason, 'held');
        assert.equal((await dibs.pools.validate(name, 'L1', { claimant: 'alice' })).valid, true);
        // holding again renews (same claimant)
        const renewed = await dibs.pools.hold(name, 'L1', 'alice', 120_000);
        assert.ok(renewed.hold!.expiresAt >= held.hold!.expiresAt);
        const redeemed = await dibs.pools.redeem(name, 'L1', { claimant: 'alice', orderId: 'o-alice' });
        assert.equal(redeemed.status, 'redeemed');
        assert.equal(redeemed.claimant, 'alice');
        assert.equal(redeemed.hold ?? null, null, 'consumed');
        assert.equal((await dibs.pools.code(name, 'L1')).hold ?? null, null);
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('claims skip a held free code', async () => {
        const name = await fresh({ codes: 1, publicCodes: true });
        await dibs.pools.hold(name, 'L1', 'alice', 60_000);
        await rejectsWith(dibs.pools.claim(name, 'bob'), 'sold_out');
        await dibs.pools.releaseHold(name, 'L1', { claimant: 'alice' });
        assert.equal((await dibs.pools.claim(name, 'bob')).code, 'L1');
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('a hold expires by itself (by the store clock): then another checkout may hold and redeem', async () => {
        const name = await fresh({ codes: 1, publicCodes: true });
        const held = await dibs.pools.hold(name, 'L1', 'alice', 1000);
        await rejectsWith(dibs.pools.redeem(name, 'L1', { claimant: 'bob', orderId: 'o-1' }), 'held');
        await untilStorePasses(held.hold!.expiresAt);
        assert.equal((await dibs.pools.code(name, 'L1')).hold ?? null, null, 'an expired hold is not reported');
        assert.equal((await dibs.pools.validate(name, 'L1', { claimant: 'bob' })).valid, true);
        assert.equal((await dibs.pools.claim(name, 'carol')).code, 'L1', 'claims see it again');
        await dibs.pools.release(name, 'L1');
        assert.equal((await dibs.pools.hold(name, 'L1', 'bob', 60_000)).hold?.claimant, 'bob');
        assert.equal((await dibs.pools.redeem(name, 'L1', { claimant: 'bob', orderId: 'o-2' })).status, 'redeemed');
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('a claimed code is held only by its holder; release and revoke end the hold', async () => {
        const name = await fresh({ codes: 2 });
        const { code } = await dibs.pools.claim(name, 'alice');
        await rejectsWith(dibs.pools.hold(name, code, 'bob', 60_000), 'conflict', 'claimant');
        assert.equal((await dibs.pools.hold(name, code, 'alice', 60_000)).hold?.claimant, 'alice');
        await rejectsWith(dibs.pools.releaseHold(name, code, { claimant: 'bob' }), 'held');
        // a checkout without a claimant redeems a claimed code for its holder: the hold is theirs
        const released = await dibs.pools.release(name, code);
        assert.equal(released.hold ?? null, null);
        const other = await dibs.pools.claim(name, 'carol');
        await dibs.pools.hold(name, other.code, 'carol', 60_000);
        assert.equal((await dibs.pools.revoke(name, other.code)).hold ?? null, null);
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('refuses what could not be redeemed: a free code of a private pool, a redeemed or revoked code, a multi-use code, bad ttl', async () => {
        const name = await fresh({ codes: 3 });
        await rejectsWith(dibs.pools.hold(name, 'L1', 'alice', 60_000), 'conflict', 'code');
        const { code } = await dibs.pools.claim(name, 'alice'); // any of the three (stores pick differently)
        const [other, last] = ['L1', 'L2', 'L3'].filter((c) => c !== code) as [string, string];
        await dibs.pools.redeem(name, code);
        await rejectsWith(dibs.pools.hold(name, code, 'alice', 60_000), 'already_redeemed');
        await dibs.pools.revoke(name, other);
        await rejectsWith(dibs.pools.hold(name, other, 'alice', 60_000), 'conflict');
        await rejectsWith(dibs.pools.hold(name, 'NOPE', 'alice', 60_000), 'not_found');
        await rejectsWith(dibs.pools.hold(name, last, 'alice', 10), 'invalid_input', 'ttlMs');
        await dibs.pools.addMultiUseCode(name, { code: 'MANY', uses: 5 });
        await rejectsWith(dibs.pools.hold(name, 'MANY', 'alice', 60_000), 'conflict', 'code');
        // releasing a hold that is not there answers with the code unchanged
        assert.equal((await dibs.pools.releaseHold(name, last)).status, 'free');
      });
    });

    describe("a code's own validity window", () => {
      it('claims skip a code outside its window; redeem refuses it (expired / not_yet_valid); validate says why', async () => {
        const name = await fresh({ codes: 3 });
        await dibs.pools.setCodeWindow(name, 'L1', { expiresAt: await storeTime(-1000) });
        await dibs.pools.setCodeWindow(name, 'L2', { startsAt: await storeTime(3_600_000) });
        const w = await dibs.pools.code(name, 'L2');
        assert.equal(w.startsAt, new Date(w.startsAt!).toISOString(), 'stored as ISO UTC');
        assert.equal((await dibs.pools.claim(name, 'alice')).code, 'L3', 'the only code inside its window');
        await rejectsWith(dibs.pools.claim(name, 'bob'), 'sold_out');
        // reopen L1 for a claim, then close it again: the holder can no longer redeem
        await dibs.pools.setCodeWindow(name, 'L1', {});
        assert.equal((await dibs.pools.claim(name, 'bob')).code, 'L1');
        await dibs.pools.setCodeWindow(name, 'L1', { expiresAt: await storeTime(-1) });
        await rejectsWith(dibs.pools.redeem(name, 'L1', { orderId: 'o-1' }), 'expired', 'code');
        const check = await dibs.pools.validate(name, 'L1');
        assert.equal(check.valid === false && check.reason, 'expired');
        await dibs.pools.setCodeWindow(name, 'L1', { startsAt: await storeTime(3_600_000) });
        await rejectsWith(dibs.pools.redeem(name, 'L1'), 'not_yet_valid', 'code');
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('the boundary: expiresAt exactly now is expired, startsAt exactly now is valid (store clock)', async () => {
        const name = await fresh({ codes: 2, publicCodes: true });
        const now = await storeTime();
        await dibs.pools.setCodeWindow(name, 'L1', { expiresAt: now });
        await dibs.pools.setCodeWindow(name, 'L2', { startsAt: now });
        // the store's clock can only have moved on since `now`: at or after expiresAt → expired
        await rejectsWith(dibs.pools.redeem(name, 'L1', { claimant: 'a', orderId: 'o-a' }), 'expired');
        await rejectsWith(dibs.pools.hold(name, 'L1', 'a', 60_000), 'expired');
        assert.equal((await dibs.pools.redeem(name, 'L2', { claimant: 'b', orderId: 'o-b' })).status, 'redeemed');
      });

      it('a code expiring while held: the holder cannot redeem after the boundary', async () => {
        const name = await fresh({ codes: 1, publicCodes: true });
        const expiresAt = await storeTime(1500);
        await dibs.pools.setCodeWindow(name, 'L1', { expiresAt });
        await dibs.pools.hold(name, 'L1', 'alice', 60_000);
        await untilStorePasses(expiresAt);
        await rejectsWith(dibs.pools.redeem(name, 'L1', { claimant: 'alice', orderId: 'o-1' }), 'expired');
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      // Stores keep codes that cannot be handed out now out of the claims' way ("parked") and bring
      // them back in bounded batches when due: more due codes than one batch must all be handed
      // out (no false sold_out), and while they wait they are still counted as free.
      it('codes whose window opens together are all handed out once it does, counted as free meanwhile; an expired one never is', async () => {
        const waiting = 210; // more than one batch of every store (Redis 100, SQL 200)
        const name = await fresh({ codes: waiting + 1, perClaimantLimit: 1 });
        const opens = await storeTime(3000);
        await Promise.all(
          Array.from({ length: waiting }, (_, i) => dibs.pools.setCodeWindow(name, `L${i + 1}`, { startsAt: opens })),
        );
        await dibs.pools.setCodeWindow(name, `L${waiting + 1}`, { expiresAt: await storeTime(-1) });
        assert.deepEqual(await dibs.pools.stats(name), {
          total: waiting + 1,
          free: waiting + 1,
          claimed: 0,
          redeemed: 0,
          revoked: 0,
        });
        if ((await storeTime()) < opens) await rejectsWith(dibs.pools.claim(name, 'early'), 'sold_out');
        await untilStorePasses(opens);
        const taken = new Set<string>();
        // 30 claimants at a time: the store's own concurrency, and 210 claims one after another
        // took minutes on the Firestore emulator under load
        for (let i = 0; i < waiting; i += 30) {
          const batch = Array.from({ length: Math.min(30, waiting - i) }, (_, j) => `c${i + j}`);
          for (const { code } of await Promise.all(batch.map((c) => dibs.pools.claim(name, c)))) taken.add(code);
        }
        assert.equal(taken.size, waiting);
        assert.ok(!taken.has(`L${waiting + 1}`), 'the expired code is never handed out');
        await rejectsWith(dibs.pools.claim(name, 'late'), 'sold_out');
        assert.deepEqual(await dibs.pools.stats(name), {
          total: waiting + 1,
          free: 1,
          claimed: waiting,
          redeemed: 0,
          revoked: 0,
        });
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('a code released outside its window waits for it; a released hold and a reopened window hand codes out at once', async () => {
        const name = await fresh({ codes: 2, publicCodes: true });
        const { code } = await dibs.pools.claim(name, 'alice');
        const other = code === 'L1' ? 'L2' : 'L1';
        await dibs.pools.setCodeWindow(name, code, { startsAt: await storeTime(3_600_000) });
        await dibs.pools.release(name, code);
        await dibs.pools.hold(name, other, 'bob', 60_000);
        assert.equal((await dibs.pools.stats(name)).free, 2);
        await rejectsWith(dibs.pools.claim(name, 'carol'), 'sold_out');
        await dibs.pools.releaseHold(name, other);
        assert.equal((await dibs.pools.claim(name, 'carol')).code, other);
        await rejectsWith(dibs.pools.claim(name, 'dave'), 'sold_out');
        await dibs.pools.setCodeWindow(name, code, {});
        assert.equal((await dibs.pools.claim(name, 'dave')).code, code);
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('combines with the pool window; bad windows and unknown codes are refused', async () => {
        const name = await fresh({ codes: 1 });
        await dibs.pools.update(name, { expiresAt: await storeTime(-1) });
        await dibs.pools.setCodeWindow(name, 'L1', { expiresAt: await storeTime(3_600_000) });
        await rejectsWith(dibs.pools.claim(name, 'a'), 'expired');
        await rejectsWith(
          dibs.pools.setCodeWindow(name, 'L1', { startsAt: await storeTime(10_000), expiresAt: await storeTime(0) }),
          'invalid_input',
          'expiresAt',
        );
        await rejectsWith(dibs.pools.setCodeWindow(name, 'L1', { expiresAt: 'soon' }), 'invalid_input', 'expiresAt');
        await rejectsWith(dibs.pools.setCodeWindow(name, 'NOPE', {}), 'not_found');
      });
    });

    describe('multi-use codes', () => {
      it('one code, N uses: each order counted once, retries answer the same, the N+1st is limit_reached', async () => {
        const name = await fresh();
        const created = await dibs.pools.addMultiUseCode(name, { code: 'WELCOME10', uses: 3 });
        assert.deepEqual(created.uses, { max: 3, used: 0, remaining: 3, perClaimant: 1 });
        const first = await dibs.pools.redeem(name, 'WELCOME10', { claimant: 'a', orderId: 'o-a' });
        assert.equal(first.status, 'redeemed');
        assert.equal(first.claimant, 'a');
        assert.equal(first.orderId, 'o-a');
        assert.equal(first.uses?.remaining, 2);
        const retry = await dibs.pools.redeem(name, 'WELCOME10', { claimant: 'a', orderId: 'o-a' });
        assert.deepEqual(retry, first, 'a retried checkout answers the same');
        await rejectsWith(
          dibs.pools.redeem(name, 'WELCOME10', { claimant: 'x', orderId: 'o-a' }),
          'conflict',
          'orderId',
        );
        await rejectsWith(
          dibs.pools.redeem(name, 'WELCOME10', { claimant: 'a', orderId: 'o-a2' }),
          'limit_reached',
          'usesPerClaimant',
        );
        await dibs.pools.redeem(name, 'WELCOME10', { claimant: 'b', orderId: 'o-b' });
        const v = await dibs.pools.validate(name, 'WELCOME10', { claimant: 'c' });
        assert.equal(v.valid, true);
        assert.equal(v.code?.uses?.remaining, 1, 'validate answers the remaining uses');
        const mine = await dibs.pools.validate(name, 'WELCOME10', { claimant: 'a' });
        assert.equal(mine.valid === false && mine.reason, 'limit_reached');
        await dibs.pools.redeem(name, 'WELCOME10', { claimant: 'c', orderId: 'o-c' });
        await rejectsWith(
          dibs.pools.redeem(name, 'WELCOME10', { claimant: 'd', orderId: 'o-d' }),
          'limit_reached',
          'uses',
        );
        const used = await dibs.pools.code(name, 'WELCOME10');
        assert.equal(used.status, 'redeemed');
        assert.deepEqual(used.uses, { max: 3, used: 3, remaining: 0, perClaimant: 1 });
        const out = await dibs.pools.validate(name, 'WELCOME10', { claimant: 'd' });
        assert.equal(out.valid === false && out.reason, 'limit_reached');
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('unredeem of an order gives its use back (recorded as an event); the order may then use it again', async () => {
        const name = await fresh();
        await dibs.pools.addMultiUseCode(name, { code: 'BF', uses: 1, usesPerClaimant: null });
        await dibs.pools.redeem(name, 'BF', { orderId: 'o-1' });
        await rejectsWith(dibs.pools.redeem(name, 'BF', { orderId: 'o-2' }), 'limit_reached');
        await rejectsWith(dibs.pools.unredeem(name, 'BF', { orderId: 'o-2' }), 'conflict', 'orderId');
        await rejectsWith(dibs.pools.unredeem(name, 'BF'), 'invalid_input', 'orderId');
        const back = await dibs.pools.unredeem(name, 'BF', { orderId: 'o-1' });
        assert.equal(back.uses?.remaining, 1);
        assert.equal(back.status, 'free');
        const events = (await dibs.pools.events({ pool: name })).filter((e) => e.type === 'code.unredeemed');
        assert.equal(events.length, 1);
        assert.equal(events[0]!.payload.orderId, 'o-1');
        assert.equal((await dibs.pools.redeem(name, 'BF', { orderId: 'o-2' })).uses?.remaining, 0);
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('needs an order (and a claimant when uses are limited per claimant); respects its window; no claim hands it out', async () => {
        const name = await fresh({ codes: 1 });
        await dibs.pools.addMultiUseCode(name, { code: 'SPRING', uses: 10, startsAt: await storeTime(3_600_000) });
        await rejectsWith(dibs.pools.redeem(name, 'SPRING', { claimant: 'a' }), 'invalid_input', 'orderId');
        await rejectsWith(
          dibs.pools.redeem(name, 'SPRING', { claimant: 'a', orderId: 'o-1' }),
          'not_yet_valid',
          'code',
        );
        const early = await dibs.pools.validate(name, 'SPRING', { claimant: 'a' });
        assert.equal(early.valid === false && early.reason, 'not_yet_valid');
        await dibs.pools.setCodeWindow(name, 'SPRING', {});
        await rejectsWith(dibs.pools.redeem(name, 'SPRING', { orderId: 'o-1' }), 'invalid_input', 'claimant');
        assert.equal((await dibs.pools.redeem(name, 'SPRING', { claimant: 'a', orderId: 'o-1' })).uses?.used, 1);
        // claims hand out single-use codes only; the multi-use code is not in the pool's counts
        assert.equal((await dibs.pools.claim(name, 'z')).code, 'L1');
        await rejectsWith(dibs.pools.claim(name, 'y'), 'sold_out');
        assert.deepEqual(await dibs.pools.stats(name), { total: 1, free: 0, claimed: 1, redeemed: 0, revoked: 0 });
        assert.deepEqual(await dibs.pools.audit(name), []);
      });

      it('a code is single- or multi-use, never both', async () => {
        const name = await fresh({ codes: 1 });
        await rejectsWith(dibs.pools.addMultiUseCode(name, { code: 'L1', uses: 2 }), 'already_exists', 'code');
        await dibs.pools.addMultiUseCode(name, { code: 'M1', uses: 2 });
        await rejectsWith(dibs.pools.addMultiUseCode(name, { code: 'M1', uses: 2 }), 'already_exists', 'code');
        assert.deepEqual(await dibs.pools.importCodes(name, ['M1', 'L2']), { imported: 1, duplicates: 1, invalid: 0 });
        await rejectsWith(dibs.pools.addMultiUseCode(name, { code: 'M2', uses: 0 }), 'invalid_input', 'uses');
        await rejectsWith(dibs.pools.addMultiUseCode('no-such-pool', { code: 'M3', uses: 2 }), 'not_found');
      });
    });
  });
}
