/**
 * Admin changes racing a claim / buy / reserve storm on the Firestore emulator (I8; the suite is in
 * support/admin-storm-suite.ts), smaller than on the other stores: the emulator is one JVM and much
 * slower than a real database (20 claimants and 80 buys: 3 processes of 8 in flight still race
 * every admin change; the SQL and Redis runs are larger). The waiting room enabled mid-storm included: no ticketless buy or
 * reservation is acknowledged after it.
 */
import { describe } from 'node:test';
import { adminStormSuite } from '../support/admin-storm-suite.js';
import { firestoreEmulatorInstalled, firestoreStoreForSuite } from '../support/firestore.js';

describe('firestore emulator: admin storms', { skip: !firestoreEmulatorInstalled() }, () => {
  const suite = firestoreStoreForSuite();

  adminStormSuite('firestore emulator', suite, {
    processes: 3,
    claimants: 20,
    claimsPerClaimant: 4,
    buys: 80,
    durationMs: 4000,
    timeoutMs: 240_000,
    endLeadMs: 1500,
    closedMs: 1500,
  });
});
