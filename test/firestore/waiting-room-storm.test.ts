/**
 * The waiting-room storm (support/room-storm.ts) on the Firestore emulator, started by this file:
 * 400 shoppers in 3 processes join at once for 20 units (the emulator is one JVM; the SQL stores
 * run 2,000 in 4). Behind FAULTS_LONG=1: the default suite has the conformance suite and the
 * fair-start storm on Firestore already.
 */
import { after, before, describe } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { firestoreEmulatorInstalled, startFirestoreEmulator, type OwnedEmulator } from '../support/firestore.js';
import { roomStormSuite } from '../support/room-storm.js';

const skip = !firestoreEmulatorInstalled() || process.env.FAULTS_LONG !== '1';

describe('firestore emulator: waiting-room storm (FAULTS_LONG=1)', { skip }, () => {
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
  roomStormSuite(
    'firestore emulator',
    {
      get dibs() {
        return dibs;
      },
      get store() {
        return store;
      },
    },
    { shoppers: 400, cap: 20, processes: 3 },
  );
});
