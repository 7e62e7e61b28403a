import { describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { lifecycleConformance } from '../conformance/lifecycle.js';
import { poolConformance } from '../conformance/pools.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';
import { checkPools } from '../model/pool-model.js';
import { checkSales } from '../model/sale-model.js';
import { SLOW_EXPIRY } from '../model/clock.js';

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
  // the model checks (test/model/) here, on the emulator this file already started
  it('coupon pools against the reference model: every answer and the final state match (seeded, shrinking)', async () => {
    const dibs = await openDibs(emulator.storeUrl());
    try {
      await checkPools(dibs, 'firestore', { runs: 5, maxCommands: 25 });
    } finally {
      await dibs.close();
    }
  });
  it('flash sales against the reference model: every answer and the final state match (seeded, shrinking)', async () => {
    const dibs = await openDibs(emulator.storeUrl());
    try {
      await checkSales(dibs, 'firestore', { runs: 5, maxCommands: 20 });
    } finally {
      await dibs.close();
    }
  });
  it("expiry by the store's clock against the reference model: holds and reservations end, units come back", async () => {
    const dibs = await openDibs(emulator.storeUrl());
    try {
      await Promise.all([
        checkPools(dibs, 'firestore', { runs: 2, maxCommands: 15, expiry: SLOW_EXPIRY }),
        checkSales(dibs, 'firestore', { runs: 2, maxCommands: 15, expiry: SLOW_EXPIRY }),
      ]);
    } finally {
      await dibs.close();
    }
  });
});
