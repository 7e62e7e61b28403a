/**
 * The waiting-room storm (support/room-storm.ts) on the Firestore emulator, started by this file:
 * 400 shoppers in 3 processes join at once for 20 units (the emulator is one JVM; the SQL stores
 * run 2,000 in 4). Behind FAULTS_LONG=1: the default suite has the conformance suite and the
 * fair-start storm on Firestore already.
 */
import { describe } from 'node:test';
import { firestoreEmulatorInstalled, firestoreStoreForSuite } from '../support/firestore.js';
import { roomStormSuite } from '../support/room-storm.js';

const skip = !firestoreEmulatorInstalled() || process.env.FAULTS_LONG !== '1';

describe('firestore emulator: waiting-room storm (FAULTS_LONG=1)', { skip }, () => {
  const suite = firestoreStoreForSuite();
  roomStormSuite('firestore emulator', suite, { shoppers: 400, cap: 20, processes: 3 });
});
