/** Rate limits on the Firestore emulator: the conformance suite unchanged and the multi-process storm. */
import { describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { limitConformance } from '../conformance/limits.js';
import { assertLimitStorm } from '../support/limit-storm.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';

describe('firestore emulator: rate limits', { skip: !firestoreEmulatorInstalled() }, () => {
  const emulator = firestoreForSuite();

  limitConformance('firestore', async () => {
    const dibs = await openDibs(emulator.storeUrl());
    return { dibs, cleanup: () => dibs.close() };
  });

  it('a storm of processes, every window within its limit, every denial required', { timeout: 120_000 }, async () => {
    const store = emulator.storeUrl();
    const dibs = await openDibs(store);
    try {
      // the emulator serialises commits of one document: a smaller limit keeps demand above it
      console.log(
        'firestore limit storm',
        JSON.stringify(
          await assertLimitStorm(dibs, store, {
            prefix: 'storm',
            scale: 0.05,
            processes: 2,
            concurrency: 2,
            durationMs: 2500,
          }),
        ),
      );
    } finally {
      await dibs.close();
    }
  });
});
