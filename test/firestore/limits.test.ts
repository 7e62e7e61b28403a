/**
 * Rate limits on the Firestore emulator: the conformance suite unchanged, the multi-process storm,
 * and a removal whose key states keep being written.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { WriteBatch } from '@google-cloud/firestore';
import { translateFirestoreError, type FirestoreBackend } from '../../src/backends/firestore/index.js';
import { encodeId } from '../../src/backends/firestore/layout.js';
import { FirestoreLimits } from '../../src/backends/firestore/limits.js';
import { TxRunner } from '../../src/backends/firestore/transactions.js';
import { translateErrors } from '../../src/backends/shared/translate-errors.js';
import { isDibsError } from '../../src/core/errors.js';
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

  // The removal deletes the limit's key states page by page until a page is empty: a process that
  // still has the definition cached, or a limit created again under the name, can keep that from
  // ever happening.
  it('removing a limit whose key states keep being written answers unavailable once its bound has passed', {
    timeout: 30_000,
  }, async () => {
    const dibs = await openDibs(emulator.storeUrl());
    const backend = dibs.backend as FirestoreBackend;
    const db = backend.layout.db;
    const batch = db.batch.bind(db);
    try {
      await dibs.limits.create({ name: 'busy', algorithm: 'quota', limit: 5, periodMs: 60_000 });
      for (const key of ['a', 'b', 'c']) await dibs.limits.take('busy', 1, { key });
      // after every batch of deletes, a take elsewhere writes the state of another key
      let written = 0;
      db.batch = () => {
        const b = batch();
        const commit = b.commit.bind(b);
        b.commit = async () => {
          const result = await commit();
          written++;
          await backend.layout.root
            .collection('limitState')
            .doc(encodeId(`busy\nlate-${written}`))
            .set({ name: 'busy', state: null, by: 'elsewhere' });
          return result;
        };
        return b as WriteBatch;
      };
      const bound = 1500;
      const limits = translateErrors(
        new FirestoreLimits(backend.layout, new TxRunner(db, bound)),
        translateFirestoreError,
      );
      const started = Date.now();
      const outcome = await limits.remove('busy').catch((error: unknown) => error);
      const took = Date.now() - started;
      db.batch = batch;
      assert.ok(isDibsError(outcome, 'unavailable'), `answered ${String(outcome)} after ${written} batches`);
      assert.equal(outcome.retriable, true);
      assert.match(outcome.message, /gave up after \d+ contended attempts .* \(the bound is 1500 ms\)/);
      assert.ok(took < bound + 3000, `answered after ${took} ms`);
      // once the writes stop, a retry deletes what is left and answers that the limit is gone
      assert.equal(await limits.remove('busy'), false);
      const left = await backend.layout.root.collection('limitState').where('name', '==', 'busy').get();
      assert.equal(left.size, 0);
    } finally {
      db.batch = batch;
      await dibs.close();
    }
  });

  it('a storm of processes, every window within its limit, every denial required', { timeout: 240_000 }, async () => {
    // (240 s: a hang catcher; the workers' own bounds, limit-storm.ts, fire first)
    const store = emulator.storeUrl();
    const dibs = await openDibs(store);
    try {
      // the emulator serialises commits of one document: a smaller limit keeps demand above it; 4
      // loops per process (each takes the three limits in turn): at 2 per process a loaded machine's
      // takes came too slowly for the quota of 2 per 500 ms ever to deny ("storm-q: nothing denied"),
      // and 4 s of it, not 2.5, gives the quota more periods to be crowded in
      console.log(
        'firestore limit storm',
        JSON.stringify(
          await assertLimitStorm(dibs, store, {
            prefix: 'storm',
            scale: 0.05,
            processes: 2,
            concurrency: 4,
            durationMs: 4000,
          }),
        ),
      );
    } finally {
      await dibs.close();
    }
  });
});
