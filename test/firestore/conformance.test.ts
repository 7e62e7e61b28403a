import { describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { lifecycleConformance } from '../conformance/lifecycle.js';
import { poolConformance } from '../conformance/pools.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';
import { checkPools } from '../model/pool-model.js';
import { checkSales } from '../model/sale-model.js';
import { type Expiry, SLOW_EXPIRY } from '../model/clock.js';
import type { Dibs } from '../../src/index.js';

/**
 * The expiry runs' TTL and margin for this emulator as fast as it is now: a model step must end
 * well inside the margin (test/model/clock.ts), and SLOW_EXPIRY's 700 ms was less than one hold
 * and its read-back on a loaded CI machine (a hold expired before the step looked at it: "the code
 * afterwards … hold: null"). The slowest of a few such steps, four times over, SLOW_EXPIRY at least.
 */
async function measuredExpiry(dibs: Dibs): Promise<Expiry> {
  const pool = `calibrate-${process.pid}`;
  await dibs.pools.create({ name: pool, publicCodes: true });
  await dibs.pools.importCodes(pool, ['K0', 'K1', 'K2']);
  let slowest = 0;
  for (const code of ['K0', 'K1', 'K2']) {
    const started = Date.now();
    await dibs.backend.pools.hold(pool, code, 'calibrate', 60_000);
    await dibs.pools.code(pool, code);
    slowest = Math.max(slowest, Date.now() - started);
  }
  const marginMs = Math.max(SLOW_EXPIRY.marginMs, 4 * slowest);
  const expiry = { marginMs, ttlMs: Math.max(SLOW_EXPIRY.ttlMs, marginMs + 300) };
  console.log(`# firestore model expiry: slowest hold and read-back ${slowest} ms → ${JSON.stringify(expiry)}`);
  return expiry;
}

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
      // 3 seeded runs besides the regression examples: the model's rules are checked at more runs on
      // the other stores (test/model/); here they are the emulator's answers to them
      await checkPools(dibs, 'firestore', { runs: 3, maxCommands: 25 });
    } finally {
      await dibs.close();
    }
  });
  it('flash sales against the reference model: every answer and the final state match (seeded, shrinking)', async () => {
    const dibs = await openDibs(emulator.storeUrl());
    try {
      await checkSales(dibs, 'firestore', { runs: 3, maxCommands: 20 });
    } finally {
      await dibs.close();
    }
  });
  it("expiry by the store's clock against the reference model: holds and reservations end, units come back", async () => {
    const dibs = await openDibs(emulator.storeUrl());
    try {
      const expiry = await measuredExpiry(dibs);
      await Promise.all([
        checkPools(dibs, 'firestore', { runs: 2, maxCommands: 15, expiry }),
        checkSales(dibs, 'firestore', { runs: 2, maxCommands: 15, expiry }),
      ]);
    } finally {
      await dibs.close();
    }
  });
});
