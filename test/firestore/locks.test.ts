/**
 * Leases, semaphores and sharded counters on the Firestore emulator: the lock conformance suite
 * unchanged, and a release in one instance waking the waiters of another through the snapshot
 * listener on the lock document.
 */
import { describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { lockConformance } from '../conformance/locks.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';
import { assertReleaseWakesOtherInstance } from '../support/wake.js';

describe('firestore emulator: locks', { skip: !firestoreEmulatorInstalled() }, () => {
  const emulator = firestoreForSuite();

  lockConformance('firestore', async () => {
    const dibs = await openDibs(emulator.storeUrl());
    return { dibs, cleanup: () => dibs.close() };
  });

  it('a release in one instance wakes the waiters of another (snapshot listener)', { timeout: 120_000 }, async () => {
    await assertReleaseWakesOtherInstance(emulator.storeUrl());
  });
});
