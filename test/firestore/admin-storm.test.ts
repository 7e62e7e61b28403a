/**
 * Admin changes racing a claim / buy / reserve storm on the Firestore emulator (I8; the suite is in
 * support/admin-storm-suite.ts), smaller than on the other stores: the emulator is one JVM and much
 * slower than a real database. The waiting room enabled mid-storm included: no ticketless buy or
 * reservation is acknowledged after it.
 */
import { after, before, describe } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { adminStormSuite } from '../support/admin-storm-suite.js';
import { firestoreEmulatorInstalled, startFirestoreEmulator, type OwnedEmulator } from '../support/firestore.js';

describe('firestore emulator: admin storms', { skip: !firestoreEmulatorInstalled() }, () => {
  let emulator: OwnedEmulator;
  let store: string;
  let dibs: Dibs;
  before(async () => {
    emulator = await startFirestoreEmulator();
    store = emulator.storeUrl();
    dibs = await openDibs(store);
  });
  after(async () => {
    await dibs?.close();
    await emulator?.stop();
  });

  adminStormSuite(
    'firestore emulator',
    {
      get dibs() {
        return dibs;
      },
      get store() {
        return store;
      },
    },
    {
      processes: 3,
      claimants: 30,
      claimsPerClaimant: 4,
      buys: 120,
      durationMs: 6000,
      timeoutMs: 240_000,
      endLeadMs: 1500,
      closedMs: 1500,
    },
  );
});
