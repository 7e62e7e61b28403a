/**
 * The fair-start storm (support/fair-start-storm.ts) on the Firestore emulator, started by this
 * file: 3 processes, 120 early and 12 late shoppers for 12 units — smaller than the SQL and Redis
 * runs, the emulator being one JVM (ten early shoppers per unit still race for every unit, and
 * the draw's rules are proved at scale on the SQL and Redis stores); FAULTS_LONG=1 runs 1,000 early and 100 late in 4 processes.
 */
import { describe } from 'node:test';
import { firestoreEmulatorInstalled, firestoreStoreForSuite } from '../support/firestore.js';
import { fairStartStormSuite } from '../support/fair-start-storm.js';

describe('firestore emulator: fair start', { skip: !firestoreEmulatorInstalled() }, () => {
  const suite = firestoreStoreForSuite();
  fairStartStormSuite(
    'firestore emulator',
    suite,
    process.env.FAULTS_LONG === '1'
      ? { pre: 1000, late: 100, cap: 60, processes: 4 }
      : { pre: 120, late: 12, cap: 12, processes: 3 },
  );
});
