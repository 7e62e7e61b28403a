import { after, before, describe } from 'node:test';
import { openDibs } from '../../src/index.js';
import { lifecycleConformance } from '../conformance/lifecycle.js';
import { poolConformance } from '../conformance/pools.js';
import { firestoreEmulatorInstalled, startFirestoreEmulator, type OwnedEmulator } from '../support/firestore.js';

describe('firestore (the official emulator, started by the test)', { skip: !firestoreEmulatorInstalled() }, () => {
  let emulator: OwnedEmulator;
  before(async () => {
    emulator = await startFirestoreEmulator();
  });
  after(async () => {
    await emulator?.stop();
  });
  poolConformance('firestore', async () => {
    const dibs = await openDibs(emulator.storeUrl());
    return { dibs, cleanup: () => dibs.close() };
  });
  lifecycleConformance('firestore', async () => {
    const dibs = await openDibs(emulator.storeUrl());
    return { dibs, cleanup: () => dibs.close() };
  });
});
