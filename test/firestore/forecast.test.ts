/** The forecast suite on the Firestore emulator, unchanged (a fresh prefix of this file's own emulator). */
import { after, before, describe } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { forecastConformance } from '../conformance/forecast.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';

describe('firestore emulator: forecasts', { skip: !firestoreEmulatorInstalled() }, () => {
  const emulator = firestoreForSuite();
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
