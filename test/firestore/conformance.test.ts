import { describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { lifecycleConformance } from '../conformance/lifecycle.js';
import { poolConformance } from '../conformance/pools.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';
import { checkPools } from '../model/pool-model.js';

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
  // the model check (test/model/pool-model.ts) here, on the emulator this file already started
  it('coupon pools against the reference model: every answer and the final state match (seeded, shrinking)', async () => {
    const dibs = await openDibs(emulator.storeUrl());
    try {
      await checkPools(dibs, 'firestore', { runs: 5, maxCommands: 25 });
    } finally {
      await dibs.close();
    }
  });
});
