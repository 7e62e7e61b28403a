/**
 * Proves cross-instance wake-ups without timing asserts: instance A subscribes to releases of a
 * key through its backend; instance B (another connection, as another process would be) acquires
 * and releases; A's listener must be called (generous bound, only to fail instead of hanging).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { openBackend } from '../../src/backends/registry.js';

export async function assertReleaseWakesOtherInstance(store: string, key = 'wake'): Promise<void> {
  const a = await openBackend(store);
  const b = await openBackend(store);
  try {
    assert.ok(a.locks && b.locks);
    let woken = 0;
    const unsubscribe = a.locks.onRelease(key, () => woken++);
    // The subscription connects lazily; release repeatedly until one is heard (bounded).
    for (let i = 0; i < 300 && woken === 0; i++) {
      const grant = await b.locks.tryAcquire(key, 1, 10_000);
      assert.ok(grant);
      await b.locks.release(key, grant.token);
      await sleep(100);
    }
    unsubscribe();
    assert.ok(woken > 0, 'no release notification reached the other instance');
  } finally {
    await a.close();
    await b.close();
  }
}
