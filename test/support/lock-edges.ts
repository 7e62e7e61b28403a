/**
 * The lock complaints DESIGN.md lists, checked against a store URL beyond the conformance suite:
 * a lease that lapsed and was taken by someone else can be neither renewed (lease_lost) nor
 * released (not_owner), and the new holder keeps its slot untouched (redlock-rb #36,
 * redis-semaphore #175/#205).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDibs } from '../../src/index.js';
import { rejectsWith } from './assert.js';

export async function assertTakenOverLeaseIsDead(store: string): Promise<void> {
  const a = await openDibs(store);
  const b = await openDibs(store);
  try {
    const old = await a.locks.acquire('taken', { ttlMs: 150 });
    await sleep(400);
    const fresh = await b.locks.acquire('taken', { ttlMs: 30_000, waitMs: 10_000 });
    assert.ok(fresh.fence > old.fence);
    await rejectsWith(a.locks.renew(old, { ttlMs: 30_000 }), 'lease_lost');
    await rejectsWith(a.locks.release(old), 'not_owner');
    const info = await a.locks.inspect('taken');
    assert.deepEqual(
      info.holders.map((h) => h.fence),
      [fresh.fence],
      'the new holder kept its slot',
    );
    await b.locks.release(fresh);
  } finally {
    await a.close();
    await b.close();
  }
}
