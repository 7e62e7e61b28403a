/**
 * Walks `dibs.semaphores.list` and `dibs.counters.list` page by page over many names — names with
 * glob and brace characters, keys with waiters and fair lines (the facade's bookkeeping) — and
 * checks that the pages together are every name exactly once, in order, and nothing else.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Dibs, Lease } from '../../src/index.js';

const ODD = ['a*', 'b?', 'c[1]', 'd}:fence', 'e\\', 'f}', 'g{x}', 'h:lock:i', 'ü', '😀'];

export async function assertListingWalk(
  dibs: Dibs,
  { locks, counters, page }: { locks: number; counters: number; page: number },
) {
  const lockNames = [...ODD, ...Array.from({ length: locks - ODD.length }, (_, i) => `k${String(i).padStart(5, '0')}`)];
  const counterNames = [...ODD, ...Array.from({ length: counters - ODD.length }, (_, i) => `n${i}`)];
  for (let i = 0; i < lockNames.length; i += 50)
    await Promise.all(
      lockNames.slice(i, i + 50).map(async (k) => dibs.locks.release(await dibs.locks.acquire(k, { ttlMs: 30_000 }))),
    );
  // bookkeeping beside two keys: a fair line and a registered waiter
  const held = await dibs.locks.acquire('k00001', { ttlMs: 30_000, fair: true });
  const waiter = dibs.locks.acquire('k00001', { ttlMs: 30_000, waitMs: 60_000, fair: true });
  const plain = await dibs.locks.acquire('a*', { ttlMs: 30_000 });
  const plainWaiter = dibs.locks.acquire('a*', { ttlMs: 30_000, waitMs: 60_000 });
  for (let i = 0; i < counterNames.length; i += 50)
    await Promise.all(counterNames.slice(i, i + 50).map((n) => dibs.counters.incr(n, 1)));
  await dibs.counters.incr('gone', 1);
  await dibs.counters.reset('gone');
  await sleep(1200); // the waiters register once they have waited a while

  try {
    const walk = async (
      list: (o: { limit: number; after?: string }) => Promise<{ items: string[]; nextCursor: string | null }>,
    ) => {
      const all: string[] = [];
      let after: string | undefined;
      let pages = 0;
      for (;;) {
        const p = await list({ limit: page, ...(after !== undefined ? { after } : {}) });
        pages++;
        assert.ok(p.items.length <= page, 'a page holds at most `limit` names');
        all.push(...p.items);
        if (p.nextCursor === null) break;
        assert.equal(p.nextCursor, p.items.at(-1), 'the cursor is the last name of the page');
        after = p.nextCursor;
      }
      return { all, pages };
    };
    const sorted = (names: string[]) => [...names].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)));
    const lockWalk = await walk((o) => dibs.semaphores.list(o));
    assert.deepEqual(lockWalk.all, sorted(lockNames), 'every lock key once, in order, no bookkeeping');
    const counterWalk = await walk((o) => dibs.counters.list(o));
    assert.deepEqual(counterWalk.all, sorted(counterNames), 'every counter once, in order, a reset one gone');
    return { lockPages: lockWalk.pages, counterPages: counterWalk.pages };
  } finally {
    // the waiters get their turn and go, whatever the checks said (a check's failure is the news)
    const settle = (lease: Promise<Lease>) => lease.then((l) => dibs.locks.release(l)).catch(() => {});
    await dibs.locks.release(held).catch(() => {});
    await dibs.locks.release(plain).catch(() => {});
    await Promise.all([settle(waiter), settle(plainWaiter)]);
  }
}
