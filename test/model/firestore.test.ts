/** The pool model check (pool-model.ts) on the Firestore emulator (started and stopped by this file). */
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';
import { checkPools } from './pool-model.js';

describe('firestore: coupon pools against the reference model', { skip: !firestoreEmulatorInstalled() }, () => {
  const emulator = firestoreForSuite();
  let dibs: Dibs | undefined;
  before(async () => {
    dibs = await openDibs(emulator.storeUrl());
  });
  after(async () => {
    await dibs?.close();
  });
  it('every answer and the final state match the model (seeded, shrinking)', async () => {
    await checkPools(dibs!, 'firestore', { runs: 8, maxCommands: 25 });
  });
});
