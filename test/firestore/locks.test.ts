/**
 * Leases, semaphores and sharded counters on the Firestore emulator: the lock conformance suite
 * unchanged, and a release in one instance waking the waiters of another through the snapshot
 * listener on the lock document; lock keys and counters listed page by page.
 */
import { describe, it } from 'node:test';
import { Firestore } from '@google-cloud/firestore';
import { openDibs } from '../../src/index.js';
import { encodeId } from '../../src/backends/firestore/layout.js';
import { assertFencesGrowAcrossLostHistory, assertFencesGrowPastTheClock } from '../support/fence-history.js';
import { assertBlockedLoopFiresSignalFirst } from '../support/lost-lease-timing.js';
import { lockConformance } from '../conformance/locks.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';
import { assertReleaseWakesOtherInstance } from '../support/wake.js';
import { assertListingWalk } from '../support/listing-walk.js';

describe('firestore emulator: locks', { skip: !firestoreEmulatorInstalled() }, () => {
  const emulator = firestoreForSuite();

  lockConformance('firestore', async () => {
    const dibs = await openDibs(emulator.storeUrl());
    return { dibs, cleanup: () => dibs.close() };
  });

  it('lists lock keys and counters page by page: every name once, in order, no bookkeeping', {
    timeout: 120_000,
  }, async () => {
    const dibs = await openDibs(emulator.storeUrl());
    try {
      console.log('pages', await assertListingWalk(dibs, { locks: 40, counters: 40, page: 9 }));
    } finally {
      await dibs.close();
    }
  });

  it('a release in one instance wakes the waiters of another (snapshot listener)', { timeout: 120_000 }, async () => {
    await assertReleaseWakesOtherInstance(emulator.storeUrl());
  });

  it('a last fence ahead of the clock (the clock stepped back) is continued, never restarted', {
    timeout: 120_000,
  }, async () => {
    const prefix = 'clock-ahead';
    const db = new Firestore({ projectId: emulator.projectId });
    try {
      await assertFencesGrowPastTheClock(emulator.storeUrl(prefix), async (key, fence) => {
        await db.doc(`dibs/${prefix}/locks/${encodeId(key)}`).update({ fence });
      });
    } finally {
      await db.terminate();
    }
  });

  it('runExclusive: the loop blocked for 60% of the TTL after the grant — the holder renews in time, never overlapping the next one', {
    timeout: 120_000,
  }, async () => {
    await assertBlockedLoopFiresSignalFirst(emulator.storeUrl());
  });

  it("lock history lost (the lock documents deleted behind its back): fences still grow, the old holder's write is refused", {
    timeout: 120_000,
  }, async () => {
    const prefix = 'lost-history';
    const db = new Firestore({ projectId: emulator.projectId });
    try {
      await assertFencesGrowAcrossLostHistory(emulator.storeUrl(prefix), {
        async forget(keys) {
          for (const key of keys) await db.doc(`dibs/${prefix}/locks/${encodeId(key)}`).delete();
        },
      });
    } finally {
      await db.terminate();
    }
  });
});
