/**
 * Waiters are visible to every instance, not only to the process they wait in: two instances wait
 * for a key a third holds, and a fourth — like `dibs locks inspect` or another service instance —
 * sees them come and go. Waits on state with a generous bound, never on speed.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDibs, type Dibs } from '../../src/index.js';

async function waitersBecome(observer: Dibs, key: string, expected: number): Promise<void> {
  let seen = -1;
  for (const deadline = Date.now() + 30_000; Date.now() < deadline; await sleep(50)) {
    seen = (await observer.locks.inspect(key)).waiters;
    if (seen === expected) return;
  }
  assert.fail(`another instance saw ${seen} waiters of ${key}, expected ${expected}`);
}

export async function assertWaitersSeenByOtherInstances(store: string, key = 'waited-for'): Promise<void> {
  const [holder, a, b, observer] = await Promise.all([
    openDibs(store),
    openDibs(store),
    openDibs(store),
    openDibs(store),
  ]);
  try {
    const lease = await holder.locks.acquire(key, { ttlMs: 60_000 });
    await waitersBecome(observer, key, 0);
    const waitingA = a.locks.acquire(key, { ttlMs: 60_000, waitMs: 60_000 });
    const waitingB = b.locks.acquire(key, { ttlMs: 60_000, waitMs: 60_000 });
    await waitersBecome(observer, key, 2);
    assert.equal((await observer.locks.inspect(key)).holders.length, 1, 'waiting is not holding');
    await holder.locks.release(lease);
    const first = await Promise.race([
      waitingA.then((l) => ({ l, by: a, other: waitingB })),
      waitingB.then((l) => ({ l, by: b, other: waitingA })),
    ]);
    await waitersBecome(observer, key, 1);
    await first.by.locks.release(first.l);
    const second = await first.other;
    await waitersBecome(observer, key, 0);
    await (first.by === a ? b : a).locks.release(second);
  } finally {
    await Promise.all([holder, a, b, observer].map((d) => d.close()));
  }
}
