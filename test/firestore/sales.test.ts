/**
 * Flash sales, carts, outbox delivery and forecasts on the Firestore emulator: the sale, cart,
 * outbox and forecast conformance suites, unchanged (each store on a fresh prefix of this file's own
 * emulator), and the forecast alert raced by several processes.
 */
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { cartConformance } from '../conformance/carts.js';
import { firestoreCartTamper } from '../support/cart-tamper.js';
import { forecastConformance } from '../conformance/forecast.js';
import { outboxConformance } from '../conformance/outbox.js';
import { saleConformance } from '../conformance/sales.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';
import { assertAlertRace } from '../support/forecast-race.js';

describe('firestore sales (the official emulator, started by the test)', {
  skip: !firestoreEmulatorInstalled(),
}, () => {
  const emulator = firestoreForSuite();
  const open = async () => {
    const store = emulator.storeUrl();
    const dibs = await openDibs(store);
    return { dibs, store, cleanup: () => dibs.close() };
  };
  saleConformance('firestore', open);
  cartConformance('firestore', open, firestoreCartTamper);
  outboxConformance('firestore', open);

  let dibs: Dibs | undefined;
  before(async () => {
    dibs = await openDibs(emulator.storeUrl());
  });
  after(async () => {
    await dibs?.close();
  });
  forecastConformance('firestore', {
    get dibs() {
      if (!dibs) throw new Error('the store is opened in before()');
      return dibs;
    },
  });

  // ≈20 s on the emulator (worker start-up and 90 claims): a long run only
  it('forecast alerts checked by 3 processes at once: each crossing recorded and answered once', {
    timeout: 120_000,
    skip: process.env.FAULTS_LONG ? false : 'FAULTS_LONG=1 runs it',
  }, async () => {
    const store = emulator.storeUrl();
    const raced = await openDibs(store);
    try {
      console.log('firestore alert race', JSON.stringify(await assertAlertRace(raced, store, { env: emulator.env })));
    } finally {
      await raced.close();
    }
  });
});
