/**
 * Flash sales, outbox delivery and forecasts on the Firestore emulator: the sale, outbox and
 * forecast conformance suites, unchanged (each store on a fresh prefix of this file's own emulator).
 */
import { after, before, describe } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { forecastConformance } from '../conformance/forecast.js';
import { outboxConformance } from '../conformance/outbox.js';
import { saleConformance } from '../conformance/sales.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';

describe('firestore sales (the official emulator, started by the test)', {
  skip: !firestoreEmulatorInstalled(),
}, () => {
  const emulator = firestoreForSuite();
  const open = async () => {
    const dibs = await openDibs(emulator.storeUrl());
    return { dibs, cleanup: () => dibs.close() };
  };
  saleConformance('firestore', open);
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
});
