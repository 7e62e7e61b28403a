import { describe } from 'node:test';
import { openDibs } from '../../src/index.js';
import { lifecycleConformance } from '../conformance/lifecycle.js';
import { poolConformance } from '../conformance/pools.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';

describe('firestore (the official emulator, started by the test)', { skip: !firestoreEmulatorInstalled() }, () => {
  const emulator = firestoreForSuite();
  poolConformance('firestore', async () => {
    const dibs = await openDibs(emulator.storeUrl());
    return { dibs, cleanup: () => dibs.close() };
  });
  lifecycleConformance('firestore', async () => {
    const dibs = await openDibs(emulator.storeUrl());
    return { dibs, cleanup: () => dibs.close() };
  });
});
