/**
 * The multi-process cart storm on the Firestore emulator (support/cart-storm-suite.ts), smaller than
 * on the other stores — 20 carts racing 20 buys, 2 at a time in each of 4 processes — since the emulator is one slow JVM.
 */
import { after, before, describe } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { cartStormSuite } from '../support/cart-storm-suite.js';
import { firestoreEmulatorInstalled, startFirestoreEmulator, type OwnedEmulator } from '../support/firestore.js';

// About two minutes on the emulator at load 30: FAULTS_LONG=1 runs it (the cart conformance suite
// runs on Firestore by default, test/firestore/sales.test.ts).
describe('firestore emulator: cart storm', {
  skip: !firestoreEmulatorInstalled()
    ? 'no emulator'
    : process.env.FAULTS_LONG !== '1'
      ? 'FAULTS_LONG=1 runs it'
      : false,
}, () => {
  let emulator: OwnedEmulator;
  let store: string;
  let dibs: Dibs;
  before(async () => {
    emulator = await startFirestoreEmulator();
    store = emulator.storeUrl();
    dibs = await openDibs(store);
  });
  after(async () => {
    await dibs?.close();
    await emulator?.stop();
  });
  cartStormSuite(
    'firestore emulator',
    {
      get dibs() {
        return dibs;
      },
      get store() {
        return store;
      },
    },
    { carts: 20, concurrency: 2, timeoutMs: 240_000 },
  );
});
