/**
 * The rate-limit conformance suite (issue 27), written once and run unchanged on every store
 * with `limits`. Periods are long enough that a loaded machine does not refill mid-assertion.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { isDibsError, type Dibs } from '../../src/index.js';
import { rejectsWith } from '../support/assert.js';
import type { ConformanceTarget } from './pools.js';

export function limitConformance(label: string, open: () => Promise<ConformanceTarget>): void {
  describe(`${label}: rate limits`, () => {
    let target: ConformanceTarget;
    let dibs: Dibs;
    let n = 0;
    const name = (p = 'l') => `${p}-${++n}`;

    before(async () => {
      target = await open();
      dibs = target.dibs;
    });
    after(async () => {
      await target?.cleanup();
    });

    it('create, get, list, update and delete a definition; defaults filled in', async () => {
      const a = name('def');
      const created = await dibs.limits.create({ name: a, algorithm: 'token-bucket', limit: 10, periodMs: 1000 });
      assert.equal(created.burst, 10);
      assert.equal(created.segments, 1);
      assert.deepEqual(await dibs.limits.get(a), created);
      assert.ok((await dibs.limits.list()).some((d) => d.name === a));
      await rejectsWith(
        dibs.limits.create({ name: a, algorithm: 'quota', limit: 1, periodMs: 1000 }),
        'already_exists',
      );
      const updated = await dibs.limits.update(a, { limit: 20 });
      assert.equal(updated.limit, 20);
      assert.equal(updated.burst, 20, 'a default burst follows the limit');
      assert.equal(updated.createdAt, created.createdAt);
      const sliding = await dibs.limits.update(a, { algorithm: 'sliding-window', periodMs: 60_000 });
      assert.equal(sliding.segments, 10);
      assert.equal(sliding.burst, 20);
      await dibs.limits.delete(a);
      await rejectsWith(dibs.limits.get(a), 'not_found');
      await rejectsWith(dibs.limits.delete(a), 'not_found');
      await rejectsWith(dibs.limits.take(a), 'not_found');
      await rejectsWith(dibs.limits.update(a, { limit: 1 }), 'not_found');
    });

    it('bad definitions and takes are invalid_input naming the field', async () => {
      await rejectsWith(
        dibs.limits.create({ name: 'bad name!', algorithm: 'quota', limit: 1, periodMs: 1000 }),
        'invalid_input',
        'name',
      );
      await rejectsWith(
        dibs.limits.create({ name: name(), algorithm: 'leaky' as never, limit: 1, periodMs: 1000 }),
        'invalid_input',
        'algorithm',
      );
      await rejectsWith(
        dibs.limits.create({ name: name(), algorithm: 'quota', limit: 0, periodMs: 1000 }),
        'invalid_input',
        'limit',
      );
      await rejectsWith(
        dibs.limits.create({ name: name(), algorithm: 'quota', limit: 1, periodMs: 1.5 }),
        'invalid_input',
        'periodMs',
      );
      await rejectsWith(
        dibs.limits.create({ name: name(), algorithm: 'quota', limit: 5, periodMs: 1000, burst: 9 }),
        'invalid_input',
        'burst',
      );
      await rejectsWith(
        dibs.limits.create({ name: name(), algorithm: 'sliding-window', limit: 5, periodMs: 1000, segments: 7 }),
        'invalid_input',
        'segments',
      );
      await rejectsWith(
        dibs.limits.create({ name: name(), algorithm: 'quota', limit: 5, periodMs: 1000, extra: 1 } as never),
        'invalid_input',
      );
      const a = name();
      await dibs.limits.create({ name: a, algorithm: 'token-bucket', limit: 5, periodMs: 60_000, burst: 3 });
      await rejectsWith(dibs.limits.take(a, 4), 'invalid_input', 'n');
      await rejectsWith(dibs.limits.take(a, 0), 'invalid_input', 'n');
      await rejectsWith(dibs.limits.take(a, 1, { key: 'a\u0000b' }), 'invalid_input', 'key');
    });

    it('token bucket: the burst is admitted, then the exact wait of one interval', async () => {
      const a = name('tb');
      // one token per 6 s, burst 4
      await dibs.limits.create({ name: a, algorithm: 'token-bucket', limit: 10, periodMs: 60_000, burst: 4 });
      const remaining = [];
      let first = 0;
      for (let i = 0; i < 4; i++) {
        const d = await dibs.limits.take(a);
        assert.equal(d.allowed, true);
        remaining.push(d.remaining);
        if (i === 0) first = d.at;
      }
      assert.deepEqual(remaining, [3, 2, 1, 0]);
      // the bucket was full at the first take (store clock `first`): one unit is back 6 s after it
      const denied = await dibs.limits.take(a);
      assert.equal(denied.allowed, false);
      const exact = (ms: number, at: number) => Math.ceil(ms - (at - first));
      assert.ok(
        !denied.allowed && Math.abs(denied.retryAfterMs - exact(6000, denied.at)) <= 1,
        `${JSON.stringify(denied)}, first at ${first}`,
      );
      // n > 1: the wait covers all of them
      const two = await dibs.limits.take(a, 2);
      assert.ok(
        !two.allowed && Math.abs(two.retryAfterMs - exact(12_000, two.at)) <= 1,
        `${JSON.stringify(two)}, first at ${first}`,
      );
      // another key has its own bucket
      assert.equal((await dibs.limits.take(a, 4, { key: 'other' })).allowed, true);
    });

    it('token bucket: after the exact wait the take is admitted', async () => {
      const a = name('tbw');
      // one unit per 1.5 s: a loaded machine does not refill it between the two takes
      await dibs.limits.create({ name: a, algorithm: 'token-bucket', limit: 2, periodMs: 3000, burst: 1 });
      assert.equal((await dibs.limits.take(a)).allowed, true);
      const denied = await dibs.limits.take(a);
      assert.ok(!denied.allowed && denied.retryAfterMs > 0 && denied.retryAfterMs <= 1500, JSON.stringify(denied));
      await sleep(denied.retryAfterMs + 5);
      assert.equal((await dibs.limits.take(a)).allowed, true);
    });

    it('sliding window: the limit per window, then the wait until the oldest bucket leaves', async () => {
      const a = name('sw');
      await dibs.limits.create({ name: a, algorithm: 'sliding-window', limit: 5, periodMs: 60_000, segments: 6 });
      for (let i = 0; i < 5; i++) assert.equal((await dibs.limits.take(a, 1, { key: 'k' })).allowed, true);
      const denied = await dibs.limits.take(a, 1, { key: 'k' });
      assert.equal(denied.allowed, false);
      // the oldest admission's 10 s bucket leaves 60–70 s after its start
      assert.ok(
        !denied.allowed && denied.retryAfterMs > 50_000 && denied.retryAfterMs <= 70_000,
        JSON.stringify(denied),
      );
      assert.equal(denied.remaining, 0);
      const fresh = await dibs.limits.take(a, 5, { key: 'k2' });
      assert.ok(fresh.allowed && fresh.remaining === 0);
    });

    it('quota: at most the limit per calendar period, the wait runs to the period end', async () => {
      const a = name('q');
      const day = 24 * 3600_000;
      await dibs.limits.create({ name: a, algorithm: 'quota', limit: 3, periodMs: day });
      const first = await dibs.limits.take(a, 2);
      assert.ok(first.allowed && first.remaining === 1);
      const denied = await dibs.limits.take(a, 2);
      assert.equal(denied.allowed, false);
      const dayEnd = (Math.floor(denied.at / day) + 1) * day;
      assert.ok(
        !denied.allowed && denied.retryAfterMs === Math.max(1, Math.ceil(dayEnd - denied.at)),
        JSON.stringify(denied),
      );
      assert.ok(!denied.allowed && denied.remaining === 1);
      assert.equal((await dibs.limits.take(a, 1)).allowed, true);
      assert.equal((await dibs.limits.take(a, 1)).allowed, false);
    });

    it('reset gives a key its full allowance back', async () => {
      const a = name('r');
      await dibs.limits.create({ name: a, algorithm: 'quota', limit: 2, periodMs: 86_400_000 });
      assert.equal((await dibs.limits.take(a, 2, { key: 'u' })).allowed, true);
      assert.equal((await dibs.limits.take(a, 1, { key: 'u' })).allowed, false);
      await dibs.limits.reset(a, { key: 'u' });
      assert.equal((await dibs.limits.take(a, 2, { key: 'u' })).allowed, true);
    });

    it('peek answers what a take would, by the store, and takes nothing (stores that cannot: unsupported)', async () => {
      const [tb, sw, q] = [name('pt'), name('ps'), name('pq')];
      await dibs.limits.create({ name: tb, algorithm: 'token-bucket', limit: 2, periodMs: 3600_000 });
      await dibs.limits.create({ name: sw, algorithm: 'sliding-window', limit: 3, periodMs: 3600_000 });
      await dibs.limits.create({ name: q, algorithm: 'quota', limit: 3, periodMs: 86_400_000 });
      if (!dibs.backend.limits?.peek) {
        await rejectsWith(dibs.limits.peek(tb), 'unsupported');
        return;
      }
      for (const a of [tb, sw, q]) {
        const fresh = await dibs.limits.peek(a, 1, { key: 'k' });
        assert.ok(fresh.allowed, `${a}: a fresh key is allowed`);
        // peeking again and again takes nothing: the same answer each time
        assert.deepEqual({ ...(await dibs.limits.peek(a, 1, { key: 'k' })), at: 0 }, { ...fresh, at: 0 });
        const taken = await dibs.limits.take(a, 1, { key: 'k' });
        assert.ok(taken.allowed);
        assert.equal(taken.remaining, fresh.remaining, `${a}: the take left what the peek said`);
        const full = a === tb ? 2 : 3;
        await dibs.limits.take(a, full - 1, { key: 'k' });
        const empty = await dibs.limits.peek(a, 1, { key: 'k' });
        assert.ok(!empty.allowed && empty.remaining === 0 && empty.retryAfterMs > 0, `${a}: ${JSON.stringify(empty)}`);
        const refused = await dibs.limits.take(a, 1, { key: 'k' });
        assert.ok(!refused.allowed);
        assert.ok(Math.abs(refused.retryAfterMs - empty.retryAfterMs) < 5_000, `${a}: the same wait`);
        assert.ok((await dibs.limits.peek(a, 1, { key: 'other' })).allowed, `${a}: other keys are apart`);
      }
      await rejectsWith(dibs.limits.peek(tb, 3), 'invalid_input', 'n');
      await rejectsWith(dibs.limits.peek(name('none')), 'not_found');
    });

    it('an update applies at once in the updating instance; a new algorithm starts afresh', async () => {
      const a = name('u');
      await dibs.limits.create({ name: a, algorithm: 'quota', limit: 2, periodMs: 86_400_000 });
      assert.equal((await dibs.limits.take(a, 2)).allowed, true);
      assert.equal((await dibs.limits.take(a)).allowed, false);
      await dibs.limits.update(a, { limit: 3 });
      assert.equal((await dibs.limits.take(a)).allowed, true, 'the raised limit admits one more in the same period');
      assert.equal((await dibs.limits.take(a)).allowed, false);
      await dibs.limits.update(a, { algorithm: 'token-bucket', limit: 1, periodMs: 3600_000 });
      assert.equal((await dibs.limits.take(a)).allowed, true);
    });

    it('waitFor sleeps out the exact wait; waitMs and an abort end it with rate_limited', async () => {
      const a = name('w');
      await dibs.limits.create({ name: a, algorithm: 'token-bucket', limit: 5, periodMs: 1000, burst: 1 });
      const started = Date.now();
      for (let i = 0; i < 3; i++) assert.equal((await dibs.limits.waitFor(a)).allowed, true);
      const took = Date.now() - started;
      assert.ok(took >= 350, `3 takes at 5/s (burst 1) took ${took} ms`);
      const controller = new AbortController();
      // a quota's period is calendar-aligned: a day's, and a waitMs of 1 s, so the wait outlasts it
      // unless this runs in a day's last second (an hour's with 60 s failed at 04:59 UTC)
      await dibs.limits.create({ name: `${a}-slow`, algorithm: 'quota', limit: 1, periodMs: 86_400_000 });
      await dibs.limits.take(`${a}-slow`);
      await rejectsWith(dibs.limits.waitFor(`${a}-slow`, 1, { waitMs: 1_000 }), 'rate_limited');
      const waiting = dibs.limits.waitFor(`${a}-slow`, 1, { signal: controller.signal });
      setTimeout(() => controller.abort(new Error('stop')), 50);
      await assert.rejects(waiting, (e: unknown) => isDibsError(e, 'rate_limited') && e.details?.aborted === true);
      // aborted while its first take is still in flight: it must end then, not sleep out the wait
      const early = new AbortController();
      const abortedEarly = dibs.limits.waitFor(`${a}-slow`, 1, { waitMs: 24 * 3600_000, signal: early.signal });
      early.abort(new Error('stop'));
      const at = Date.now();
      const stalled = new Promise<'stalled'>((resolve) => setTimeout(resolve, 10_000, 'stalled').unref());
      const ended = await Promise.race([
        abortedEarly.then(
          () => 'allowed' as const,
          (e: unknown) => e,
        ),
        stalled,
      ]);
      assert.ok(isDibsError(ended, 'rate_limited') && ended.details?.aborted === true, `ended with ${String(ended)}`);
      assert.ok(Date.now() - at < 10_000);
    });

    it('concurrent takes in one instance never over-admit', async () => {
      const a = name('c');
      await dibs.limits.create({ name: a, algorithm: 'sliding-window', limit: 7, periodMs: 600_000, segments: 10 });
      const results = await Promise.all(Array.from({ length: 16 }, () => dibs.limits.take(a)));
      assert.equal(results.filter((r) => r.allowed).length, 7);
    });
  });
}
