/**
 * Flash sales and outbox delivery on the Firestore emulator: the sale and outbox conformance
 * suites, unchanged (each store on a fresh prefix of this file's own emulator).
 */
import { after, before, describe } from 'node:test';
import { openDibs } from '../../src/index.js';
import { outboxConformance } from '../conformance/outbox.js';
import { saleConformance } from '../conformance/sales.js';
import { firestoreEmulatorInstalled, startFirestoreEmulator, type OwnedEmulator } from '../support/firestore.js';

describe('firestore sales (the official emulator, started by the test)', { skip: !firestoreEmulatorInstalled() }, () => {
  let emulator: OwnedEmulator;
  before(async () => {
    emulator = await startFirestoreEmulator();
  });
  after(async () => {
    await emulator?.stop();
  });
  const open = async () => {
    const dibs = await openDibs(emulator.storeUrl());
    return { dibs, cleanup: () => dibs.close() };
  };
  saleConformance('firestore', open);
  outboxConformance('firestore', open);
});
