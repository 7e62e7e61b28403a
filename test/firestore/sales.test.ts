/**
 * Flash sales, carts and outbox delivery on the Firestore emulator: the sale, cart and outbox conformance
 * suites, unchanged (each store on a fresh prefix of this file's own emulator).
 */
import { describe } from 'node:test';
import { openDibs } from '../../src/index.js';
import { cartConformance } from '../conformance/carts.js';
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
  cartConformance('firestore', open);
  outboxConformance('firestore', open);
});
