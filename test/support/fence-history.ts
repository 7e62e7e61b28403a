/**
 * Fences across a store that lost its lock history — a Redis restarted without persistence, a
 * failover to a replica that missed the last writes, a SQLite file rolled back after a power loss:
 * holder A takes the key, the store forgets A's lease AND the key's fence (`forget`), holder B
 * (another instance) takes the key. B's fence must be above A's, so a fenced resource that saw A
 * accepts B and then refuses A's late write. A semaphore's fences after the loss must be distinct
 * and above every fence it handed out before. A renewal keeps the fence.
 */
import assert from 'node:assert/strict';
import { FenceGuard, openDibs, type Dibs } from '../../src/index.js';

export interface LostHistory {
  /** Makes the store forget everything about `keys` (leases and fences). */
  forget(keys: string[]): Promise<void>;
}

/** Retries `fn` while the store is still coming back (a restarted server answers `unavailable`). */
async function whenBack<T>(fn: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await fn();
    } catch (error) {
      if ((error as { code?: string }).code !== 'unavailable' || attempt >= 100) throw error;
      await new Promise((r) => setTimeout(r, 100));
    }
  }
}

export async function assertFencesGrowAcrossLostHistory(
  store: string,
  loss: LostHistory,
  key = 'fenced',
): Promise<void> {
  const sem = `${key}-sem`;
  const a = await openDibs(store);
  let b: Dibs | undefined;
  try {
    const leaseA = await a.locks.acquire(key, { ttlMs: 60_000 });
    const semBefore = await Promise.all([1, 2].map(() => a.semaphores.acquire(sem, 3, { ttlMs: 60_000 })));
    const guard = new FenceGuard();
    guard.check('row', leaseA); // A writes while it holds the key

    await loss.forget([key, sem]);

    b = await openDibs(store);
    const leaseB = await whenBack(() => b!.locks.acquire(key, { ttlMs: 60_000, waitMs: 30_000 }));
    assert.ok(
      leaseB.fence > leaseA.fence,
      `after the store lost its history, B got fence ${leaseB.fence}, not above A's ${leaseA.fence}`,
    );
    assert.ok(Number.isSafeInteger(leaseB.fence), `fence ${leaseB.fence} is not a safe integer`);
    guard.check('row', leaseB); // B writes
    assert.equal(guard.accept('row', leaseA), false, "A's late write must be refused");
    const renewed = await b.locks.renew(leaseB);
    assert.equal(renewed.fence, leaseB.fence, 'a renewal keeps the fence');

    const semAfter = await Promise.all(
      [1, 2, 3].map(() => whenBack(() => b!.semaphores.acquire(sem, 3, { ttlMs: 60_000 }))),
    );
    const before = Math.max(...semBefore.map((l) => l.fence));
    const fences = semAfter.map((l) => l.fence);
    assert.equal(new Set(fences).size, 3, `semaphore fences not distinct: ${fences}`);
    for (const f of fences) assert.ok(f > before, `semaphore fence ${f} after the loss is not above ${before}`);
    await Promise.all([b.locks.release(leaseB), ...semAfter.map((l) => b!.semaphores.release(l))]);
  } finally {
    await a.close().catch(() => undefined);
    await b?.close();
  }
}

/**
 * A store clock that stepped back (or fences that ran ahead of it): the key's last fence is set a
 * day ahead of the clock (`setLastFence` writes it behind the store's back); the next fences
 * continue from it (+1 each, a semaphore's distinct), never restart from the clock.
 */
export async function assertFencesGrowPastTheClock(
  store: string,
  setLastFence: (key: string, fence: number) => Promise<void>,
  key = 'ahead',
): Promise<void> {
  const dibs = await openDibs(store);
  try {
    await dibs.locks.release(await dibs.locks.acquire(key, { ttlMs: 60_000 })); // the key's fence exists
    const ahead = (Date.now() + 86_400_000) * 1000;
    await setLastFence(key, ahead);
    const lease = await dibs.locks.acquire(key, { ttlMs: 60_000 });
    assert.equal(lease.fence, ahead + 1);
    await dibs.locks.release(lease);
    const sem = await Promise.all([1, 2, 3].map(() => dibs.semaphores.acquire(key, 3, { ttlMs: 60_000 })));
    assert.deepEqual(
      sem.map((l) => l.fence).sort((x, y) => x - y),
      [ahead + 2, ahead + 3, ahead + 4],
    );
    await Promise.all(sem.map((l) => dibs.semaphores.release(l)));
    assert.equal((await dibs.locks.inspect(key)).lastFence, ahead + 4);
  } finally {
    await dibs.close();
  }
}
