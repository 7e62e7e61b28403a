/** The waiting-room conformance suite, unchanged, on the Firestore emulator (started by this file). */
import { describe } from 'node:test';
import { openDibs } from '../../src/index.js';
import { waitingRoomConformance } from '../conformance/waiting-room.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';

describe('firestore (the official emulator, started by the test)', { skip: !firestoreEmulatorInstalled() }, () => {
  const emulator = firestoreForSuite();
  waitingRoomConformance('firestore', async () => {
    const dibs = await openDibs(emulator.storeUrl());
    return { dibs, cleanup: () => dibs.close() };
  });
});
