/**
 * The HTTP service's store (API keys, idempotency records) on the Firestore emulator: the
 * service-store conformance suite, unchanged; then `buildServer` on a Firestore store alone
 * serves an authenticated request and replays an idempotent claim; and the purge of expired
 * idempotency records ends while records keep expiring.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { FieldValue, Timestamp, type WriteBatch } from '@google-cloud/firestore';
import type { FirestoreBackend } from '../../src/backends/firestore/index.js';
import { openDibs } from '../../src/index.js';
import { buildServer } from '../../src/service/app.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { serviceStoreConformance } from '../conformance/service-store.js';
import { firestoreEmulatorInstalled, firestoreForSuite } from '../support/firestore.js';

describe('firestore service store (the official emulator, started by the test)', {
  skip: !firestoreEmulatorInstalled(),
}, () => {
  const emulator = firestoreForSuite();
  serviceStoreConformance('firestore', async () => {
    const dibs = await openDibs(emulator.storeUrl());
    return { dibs, cleanup: () => dibs.close() };
  });

  it('purging expired idempotency records ends though records keep expiring while it runs', {
    timeout: 30_000,
  }, async () => {
    const dibs = await openDibs(emulator.storeUrl());
    const { layout } = dibs.backend as FirestoreBackend;
    const db = layout.db;
    const records = layout.root.collection('idempotency');
    const batch = db.batch.bind(db);
    // a full page of records that expired before the purge began
    const write = async (n: number, until: Timestamp | FieldValue) => {
      const b = batch();
      for (let i = 0; i < n; i++) b.set(records.doc(), { f: 'fp', until });
      await b.commit();
    };
    try {
      await write(500, Timestamp.fromMillis(Date.now() - 60_000));
      // after each page it deletes, as many records expire (a busy service: records' TTLs ending)
      let rounds = 0;
      db.batch = () => {
        const b = batch();
        const commit = b.commit.bind(b);
        b.commit = async () => {
          const result = await commit();
          rounds++;
          await write(500, FieldValue.serverTimestamp());
          return result;
        };
        return b as WriteBatch;
      };
      const purged = await dibs.backend.service.purgeExpired();
      db.batch = batch;
      assert.equal(purged, 500, `purged ${purged} in ${rounds} rounds`);
      // the records that expired meanwhile are the next run's
      assert.equal(await dibs.backend.service.purgeExpired(), 500);
    } finally {
      db.batch = batch;
      await dibs.close();
    }
  });

  it('the HTTP service runs on a Firestore store alone: keys, claims, an idempotent replay', async () => {
    const dibs = await openDibs(emulator.storeUrl());
    const app = buildServer({ dibs });
    try {
      await dibs.pools.create({ name: 'web' });
      await dibs.pools.importCodes('web', ['W-1', 'W-2']);
      const { key } = await createApiKey(dibs.backend.service, { name: 'ci', scopes: ['admin'] });
      const claim = () =>
        app.inject({
          method: 'POST',
          url: '/v1/pools/web/claims',
          headers: { authorization: `Bearer ${key}`, 'idempotency-key': 'order-1' },
          payload: { claimant: 'ann' },
        });
      const first = await claim();
      assert.equal(first.statusCode, 201, first.body);
      const again = await claim();
      assert.equal(again.statusCode, 201);
      assert.equal(again.json().code, first.json().code, 'the replay answers the same code');
      assert.equal(
        (
          await app.inject({
            method: 'GET',
            url: '/v1/pools/web',
            headers: { authorization: 'Bearer dibs_0000000000000000_nope' },
          })
        ).statusCode,
        401,
      );
      assert.deepEqual(await dibs.pools.audit('web'), []);
    } finally {
      await app.close();
      await dibs.close();
    }
  });
});
