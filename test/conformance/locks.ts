/**
 * The lock/semaphore/counter conformance suite, written once and run unchanged on
 * every backend that has `locks`/`counters`. TTLs are generous and nothing asserts on speed.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Dibs, FenceGuard, type Lease } from '../../src/index.js';
import { fairQueueKey } from '../../src/core/locks/facade.js';
import { rejectsWith } from '../support/assert.js';
import type { ConformanceTarget } from './pools.js';

export function lockConformance(label: string, open: () => Promise<ConformanceTarget>): void {
  describe(`${label}: locks, semaphores, counters`, () => {
    let target: ConformanceTarget;
    let dibs: Dibs;
    let n = 0;
    const key = (p = 'k') => `${p}-${++n}`;

    before(async () => {
      target = await open();
      dibs = target.dibs;
    });
    after(async () => {
      await target?.cleanup();
    });

    it('acquire returns a live lease with a positive validity measured after the grant', async () => {
      const k = key();
      // a TTL well above a step's time: a grant answered after its TTL is no lease (acquire gives it
      // back and, with waitMs 0, answers lock_timeout), and a cold Firestore emulator on a loaded CI
      // machine took more than 10 s for its first one
      const lease = await dibs.locks.acquire(k, { ttlMs: 60_000 });
      assert.equal(lease.key, k);
      assert.ok(lease.token.length >= 16);
      // max(last + 1, the store's clock in µs): positive, exact as a JavaScript number
      assert.ok(Number.isSafeInteger(lease.fence) && lease.fence > 0, `fence ${lease.fence}`);
      assert.ok(lease.validForMs > 0 && lease.validForMs <= 60_000);
      assert.ok(Date.parse(lease.expiresAt) > 0);
      await dibs.locks.release(lease);
    });

    it('tryAcquire returns null while held, and a lease after release', async () => {
      const k = key();
      const a = await dibs.locks.tryAcquire(k, { ttlMs: 10_000 });
      assert.ok(a);
      assert.equal(await dibs.locks.tryAcquire(k, { ttlMs: 10_000 }), null);
      await dibs.locks.release(a);
      const b = await dibs.locks.tryAcquire(k, { ttlMs: 10_000 });
      assert.ok(b);
      assert.ok(b.fence > a.fence);
      await dibs.locks.release(b);
    });

    it('acquire with waitMs 0 on a held lock throws lock_timeout', async () => {
      const k = key();
      const a = await dibs.locks.acquire(k, { ttlMs: 10_000 });
      await rejectsWith(dibs.locks.acquire(k, { waitMs: 0 }), 'lock_timeout');
      await rejectsWith(dibs.locks.acquire(k, { waitMs: 200 }), 'lock_timeout');
      await dibs.locks.release(a);
    });

    it('a waiter gets the lock when the holder releases', async () => {
      const k = key();
      const a = await dibs.locks.acquire(k, { ttlMs: 10_000 });
      const waiting = dibs.locks.acquire(k, { ttlMs: 10_000, waitMs: 60_000 });
      await waitersBecome(dibs, k, 1);
      await dibs.locks.release(a);
      const b = await waiting;
      assert.ok(b.fence > a.fence);
      await dibs.locks.release(b);
    });

    it('renew and release work for the owner only', async () => {
      const k = key();
      const a = await dibs.locks.acquire(k, { ttlMs: 10_000 });
      const renewed = await dibs.locks.renew(a, { ttlMs: 20_000 });
      assert.equal(renewed.fence, a.fence);
      assert.ok(Date.parse(renewed.expiresAt) >= Date.parse(a.expiresAt));
      const foreign = { ...a, token: 'x'.repeat(22) };
      await rejectsWith(dibs.locks.renew(foreign), 'lease_lost');
      await rejectsWith(dibs.locks.release(foreign), 'not_owner');
      await dibs.locks.release(a);
      await rejectsWith(dibs.locks.release(a), 'not_owner');
      await rejectsWith(dibs.locks.renew(a), 'lease_lost');
    });

    it('an expired lease cannot be renewed or released, and the key is free again with a higher fence', async () => {
      const k = key();
      // a short TTL, but longer than this store takes to grant (a grant answered after its TTL is no
      // lease: the Firestore emulator at load 40 took longer than 150 ms)
      const t0 = performance.now();
      await dibs.locks.release(await dibs.locks.acquire(key(), { ttlMs: 60_000 }));
      const ttlMs = Math.max(150, Math.ceil(4 * (performance.now() - t0)));
      const a = await dibs.locks.acquire(k, { ttlMs, waitMs: 10 * ttlMs });
      // expired when the store says so (state, not a sleep of the TTL on this process's clock)
      await until(async () => (await dibs.locks.inspect(k)).holders.length === 0, `${k}: the lease never lapsed`);
      await rejectsWith(dibs.locks.renew(a), 'lease_lost');
      await rejectsWith(dibs.locks.release(a), 'not_owner');
      const b = await dibs.locks.tryAcquire(k, { ttlMs: 10_000 });
      assert.ok(b);
      assert.ok(b.fence > a.fence);
      await dibs.locks.release(b);
    });

    it('fences increase strictly per key and survive release', async () => {
      const k = key();
      let last = 0;
      for (let i = 0; i < 5; i++) {
        const lease = await dibs.locks.acquire(k, { ttlMs: 10_000 });
        assert.ok(lease.fence > last);
        last = lease.fence;
        await dibs.locks.release(lease);
      }
      assert.equal((await dibs.locks.inspect(k)).lastFence, last);
    });

    it('inspect shows holders by token prefix only', async () => {
      const k = key();
      const a = await dibs.locks.acquire(k, { ttlMs: 10_000 });
      const info = await dibs.locks.inspect(k);
      assert.equal(info.holders.length, 1);
      assert.equal(info.holders[0]!.tokenPrefix, a.token.slice(0, 8));
      assert.equal(info.holders[0]!.fence, a.fence);
      await dibs.locks.release(a);
      assert.equal((await dibs.locks.inspect(k)).holders.length, 0);
    });

    it('a semaphore grants up to N concurrent leases, each with its own fence', async () => {
      const k = key('sem');
      const leases = await Promise.all([1, 2, 3].map(() => dibs.semaphores.acquire(k, 3, { ttlMs: 10_000 })));
      assert.equal(new Set(leases.map((l) => l.fence)).size, 3);
      assert.equal(await dibs.semaphores.tryAcquire(k, 3, { ttlMs: 10_000 }), null);
      await dibs.semaphores.release(leases[0]!);
      const d = await dibs.semaphores.tryAcquire(k, 3, { ttlMs: 10_000 });
      assert.ok(d);
      for (const l of [...leases.slice(1), d]) await dibs.semaphores.release(l);
    });

    it('an AbortSignal cancels a wait', async () => {
      const k = key();
      const a = await dibs.locks.acquire(k, { ttlMs: 10_000 });
      const ac = new AbortController();
      const waiting = dibs.locks.acquire(k, { waitMs: 30_000, signal: ac.signal });
      setTimeout(() => ac.abort(), 50);
      await rejectsWith(waiting, 'lock_timeout');
      await dibs.locks.release(a);
      assert.equal((await dibs.locks.inspect(k)).waiters, 0);
    });

    it('runExclusive releases after fn and keeps the lease alive past its TTL by renewing', async () => {
      const k = key();
      // Renewal runs at 0.8×TTL; a TTL of 2 s leaves 400 ms of slack for a loaded machine.
      const result = await dibs.locks.runExclusive(
        k,
        async (signal) => {
          await sleep(4500);
          assert.equal(signal.aborted, false);
          return 42;
        },
        { ttlMs: 2000 },
      );
      assert.equal(result, 42);
      assert.equal((await dibs.locks.inspect(k)).holders.length, 0);
    });

    it('runExclusive fires the signal when maxHoldMs is reached, and a stale fence is rejected', async () => {
      const k = key();
      const guard = new FenceGuard();
      let firstFence = 0;
      await dibs.locks.runExclusive(
        k,
        async (signal, lease) => {
          firstFence = lease.fence;
          guard.check('row', lease.fence);
          await new Promise<void>((resolve) => signal.addEventListener('abort', () => resolve(), { once: true }));
        },
        { ttlMs: 5_000, maxHoldMs: 200 },
      );
      const next = await dibs.locks.acquire(k, { ttlMs: 10_000, waitMs: 10_000 });
      guard.check('row', next.fence);
      assert.throws(() => guard.check('row', firstFence), { code: 'lease_lost' });
      await dibs.locks.release(next);
    });

    /** Polls `done` (state, not time) until it holds; a generous bound for a loaded machine. */
    async function until(done: () => Promise<boolean>, failure: string): Promise<void> {
      for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(20)) if (await done()) return;
      assert.fail(failure);
    }

    /** Polls inspect (state, not time) until `waiters` is reached; generous bound for a loaded machine. */
    async function waitersBecome(d: Dibs, k: string, expected: number): Promise<void> {
      let seen = -1;
      for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(20)) {
        seen = (await d.locks.inspect(k)).waiters;
        if (seen === expected) return;
      }
      assert.fail(`${k}: ${seen} waiters, expected ${expected}`);
    }

    it("fair: waiters of two instances are granted in the order of their tickets (the store's sequence)", async () => {
      const k = key('fair');
      const other = new Dibs(dibs.backend); // a second facade over the same store: its own in-process queue
      // the holder releases explicitly; its TTL outlives six waiters queuing on a loaded emulator
      const holder = await dibs.locks.acquire(k, { ttlMs: 180_000 });
      const granted: Lease[] = [];
      const waiters: Promise<void>[] = [];
      for (let i = 0; i < 6; i++) {
        const d = i % 2 === 0 ? dibs : other;
        waiters.push(
          d.locks.acquire(k, { ttlMs: 30_000, waitMs: 180_000, fair: true }).then(async (lease) => {
            granted.push(lease);
            await sleep(5);
            await d.locks.release(lease);
          }),
        );
        await waitersBecome(dibs, k, i + 1); // each in line before the next starts
      }
      await dibs.locks.release(holder);
      await Promise.all(waiters);
      assert.equal(granted.length, 6);
      for (const lease of granted) assert.equal(typeof lease.ticket, 'number', 'every waiter queued with a ticket');
      const byFence = [...granted].sort((a, b) => a.fence - b.fence);
      for (let i = 1; i < byFence.length; i++)
        assert.ok(
          byFence[i]!.ticket! > byFence[i - 1]!.ticket!,
          `grants out of ticket order: ${JSON.stringify(byFence.map((l) => [l.fence, l.ticket]))}`,
        );
      await waitersBecome(dibs, k, 0);
    });

    it("fair: a dead waiter's ticket blocks the line only until it lapses; fair tryAcquire never jumps the line", async () => {
      const k = key('fair-dead');
      // A waiter that died right after taking its ticket: a ticket nobody renews (short TTL).
      // its TTL far above a step of this store (a 1.5 s ticket lapsed before the next step on the
      // Firestore emulator at load 40: the line was empty and fair tryAcquire rightly got the slot)
      const t0 = performance.now();
      await dibs.locks.release(await dibs.locks.acquire(key(), { ttlMs: 60_000 }));
      const deadTtlMs = Math.max(1_500, Math.ceil(10 * (performance.now() - t0)));
      const dead = await dibs.backend.locks.tryAcquire(fairQueueKey(k), 1_000_000, deadTtlMs);
      assert.ok(dead);
      assert.equal(
        await dibs.locks.tryAcquire(k, { ttlMs: 10_000, fair: true }),
        null,
        'the slot is free but the line is not empty',
      );
      const plain = await dibs.locks.tryAcquire(k, { ttlMs: 10_000 }); // the non-fair path ignores the line
      assert.ok(plain);
      await dibs.locks.release(plain);
      const lease = await dibs.locks.acquire(k, { ttlMs: 10_000, waitMs: 60_000, fair: true });
      assert.ok(lease.ticket! > dead.fence, 'queued behind the dead ticket, granted once it lapsed');
      assert.equal(
        (await dibs.backend.locks.inspect(fairQueueKey(k))).holders.length,
        0,
        'the grant removed its ticket',
      );
      await dibs.locks.release(lease);
      const again = await dibs.locks.tryAcquire(k, { ttlMs: 10_000, fair: true });
      assert.ok(again, 'an empty line and a free slot: fair tryAcquire gets it');
      await dibs.locks.release(again);
    });

    it('fair: a waiter that times out or is aborted leaves the line', async () => {
      const k = key('fair-leave');
      const other = new Dibs(dibs.backend);
      const holder = await dibs.locks.acquire(k, { ttlMs: 30_000 });
      await rejectsWith(other.locks.acquire(k, { ttlMs: 10_000, waitMs: 300, fair: true }), 'lock_timeout');
      assert.equal((await dibs.backend.locks.inspect(fairQueueKey(k))).holders.length, 0, 'timed out: ticket removed');
      const ac = new AbortController();
      const waiting = other.locks.acquire(k, { ttlMs: 10_000, waitMs: 60_000, fair: true, signal: ac.signal });
      await waitersBecome(dibs, k, 1);
      ac.abort();
      await rejectsWith(waiting, 'lock_timeout');
      assert.equal((await dibs.backend.locks.inspect(fairQueueKey(k))).holders.length, 0, 'aborted: ticket removed');
      await dibs.locks.release(holder);
      const next = await dibs.locks.tryAcquire(k, { ttlMs: 10_000, fair: true });
      assert.ok(next, 'nobody left in line blocks the key');
      await dibs.locks.release(next);
    });

    it('fair semaphore: slots go to the first tickets in line; tryAcquire does not jump it', async () => {
      const k = key('fair-sem');
      const a = await dibs.semaphores.acquire(k, 2, { ttlMs: 30_000 });
      const b = await dibs.semaphores.acquire(k, 2, { ttlMs: 30_000 });
      const first = dibs.semaphores.acquire(k, 2, { ttlMs: 30_000, waitMs: 60_000, fair: true });
      await waitersBecome(dibs, k, 1);
      await dibs.semaphores.release(a);
      const lease = await first;
      assert.equal(await dibs.semaphores.tryAcquire(k, 2, { ttlMs: 30_000, fair: true }), null, 'both slots held');
      await dibs.semaphores.release(b);
      const c = await dibs.semaphores.tryAcquire(k, 2, { ttlMs: 30_000, fair: true });
      assert.ok(c && c.fence > lease.fence);
      await Promise.all([dibs.semaphores.release(lease), dibs.semaphores.release(c)]);
    });

    it('invalid input is rejected with invalid_input', async () => {
      await rejectsWith(dibs.locks.acquire('', {}), 'invalid_input');
      await rejectsWith(dibs.locks.acquire('k', { ttlMs: -1 }), 'invalid_input');
      await rejectsWith(dibs.semaphores.acquire('k', 0), 'invalid_input');
      await rejectsWith(dibs.locks.acquire('k', { fair: 'yes' as never }), 'invalid_input');
      await rejectsWith(dibs.counters.incr('c', 1.5), 'invalid_input');
    });

    it('counters are exact: incr, decr, get, reset', async () => {
      const c = key('ctr');
      assert.equal((await dibs.counters.get(c)).value, 0);
      await Promise.all(Array.from({ length: 50 }, () => dibs.counters.incr(c)));
      await dibs.counters.incr(c, 10);
      await dibs.counters.decr(c, 3);
      const v = await dibs.counters.get(c);
      assert.equal(v.value, 57);
      assert.ok(v.shards >= 1);
      await dibs.counters.reset(c);
      assert.equal((await dibs.counters.get(c)).value, 0);
    });

    it('lists lock keys ever granted (not the bookkeeping of waiters and fair lines) and counters, in order with a cursor (stores that cannot: unsupported)', async () => {
      const run = `list${++n}`;
      const [b, a, c] = [`${run}-b`, `${run}-a`, `${run}-c`];
      // released explicitly at the end: their TTLs outlive the listing on a loaded store
      const held = await dibs.locks.acquire(b, { ttlMs: 120_000 });
      await dibs.locks.release(await dibs.locks.acquire(a, { ttlMs: 10_000 }));
      const fair = await dibs.locks.acquire(c, { ttlMs: 120_000, fair: true });
      const waiting = dibs.locks.acquire(c, { ttlMs: 10_000, waitMs: 120_000, fair: true }); // a ticket in c's line
      await until(
        async () => (await dibs.backend.locks.inspect(fairQueueKey(c))).holders.length === 1,
        `${c}: the waiter's ticket never showed in the line`,
      );
      await dibs.counters.incr(`${run}-y`, 2);
      await dibs.counters.incr(`${run}-x`, 1);
      const locks = dibs.backend.locks;
      if (!locks.listKeys) {
        await rejectsWith(dibs.semaphores.list(), 'unsupported');
      } else {
        const mine = async (after?: string) =>
          (await dibs.semaphores.list({ limit: 1000, ...(after ? { after } : {}) })).items.filter((k) =>
            k.startsWith(run),
          );
        assert.deepEqual(
          await mine(),
          [a, b, c],
          'released keys stay listed (their fence lives on), internal keys never',
        );
        const first = await dibs.semaphores.list({ limit: 1, after: `${run}-` });
        assert.deepEqual(first, { items: [a], nextCursor: a });
        assert.deepEqual((await dibs.semaphores.list({ limit: 2, after: a })).items, [b, c]);
        assert.ok((await dibs.semaphores.list({ limit: 1000 })).items.every((k) => !/[\u0000-\u001f]/.test(k)));
      }
      if (!dibs.backend.counters.listNames) {
        await rejectsWith(dibs.counters.list(), 'unsupported');
      } else {
        assert.deepEqual(
          (await dibs.counters.list({ limit: 1000, after: `${run}-` })).items.filter((k) => k.startsWith(run)),
          [`${run}-x`, `${run}-y`],
        );
        assert.deepEqual(await dibs.counters.list({ limit: 1, after: `${run}-` }), {
          items: [`${run}-x`],
          nextCursor: `${run}-x`,
        });
      }
      await rejectsWith(dibs.semaphores.list({ limit: 0 }), locks.listKeys ? 'invalid_input' : 'unsupported');
      await dibs.locks.release(fair);
      await dibs.locks.release(await waiting);
      await dibs.locks.release(held);
    });
  });
}
