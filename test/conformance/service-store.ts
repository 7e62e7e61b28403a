/**
 * The ServiceStore contract (API keys + idempotency records), written once and run against every
 * store: insert-if-absent must hold under concurrency, expired records count as absent.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import type { Dibs } from '../../src/index.js';
import type { ServiceStore } from '../../src/core/service-store.js';
import { createApiKey, KeyVerifier } from '../../src/service/auth/keys.js';

export function serviceStoreConformance(
  name: string,
  open: () => Promise<{ dibs: Dibs; cleanup(): Promise<void> }>,
): void {
  describe(`ServiceStore on ${name}`, () => {
    let env: { dibs: Dibs; cleanup(): Promise<void> };
    let store: ServiceStore;
    before(async () => {
      env = await open();
      store = env.dibs.backend.service;
      assert.ok(store, `${name} has a service store`);
    });
    after(() => env.cleanup());
    const unique = () => randomBytes(6).toString('hex');

    it('creates, lists, verifies and revokes keys; only a hash is stored', async () => {
      const tenant = `t${unique()}`;
      const created = await createApiKey(store, { tenant, name: 'ci', scopes: ['pools:read', 'pools:claim'] });
      const record = await store.getKey(created.record.id);
      assert.ok(record);
      assert.notEqual(record.hash, created.key);
      assert.ok(!JSON.stringify(record).includes(created.key.slice('dibs_'.length + 17)), 'the secret is not stored');
      assert.deepEqual(record.scopes, ['pools:read', 'pools:claim']);
      assert.deepEqual(
        (await store.listKeys(tenant)).map((k) => k.id),
        [created.record.id],
      );
      const verifier = new KeyVerifier(store, 0);
      assert.deepEqual(await verifier.verify(created.key), {
        keyId: created.record.id,
        tenant,
        scopes: ['pools:read', 'pools:claim'],
      });
      await assert.rejects(verifier.verify(created.key.slice(0, -1) + (created.key.endsWith('A') ? 'B' : 'A')), {
        code: 'unauthorized',
      });
      const revoked = await store.revokeKey(created.record.id);
      assert.ok(revoked?.revokedAt);
      assert.equal(
        (await store.revokeKey(created.record.id))?.revokedAt,
        revoked.revokedAt,
        'revoking twice keeps the first time',
      );
      await assert.rejects(verifier.verify(created.key), { code: 'unauthorized' });
      assert.equal(await store.revokeKey('ffffffffffffffff'), null);
      assert.equal(await store.getKey('ffffffffffffffff'), null);
    });

    it('begins an idempotent request once, even when many begin at the same time', async () => {
      const scope = unique();
      const results = await Promise.all(
        Array.from({ length: 20 }, () => store.beginIdempotent(scope, 'k', 'fp1', 60_000)),
      );
      assert.equal(results.filter((r) => r.state === 'started').length, 1);
      assert.ok(
        results.filter((r) => r.state !== 'started').every((r) => r.state === 'in_flight' && r.fingerprint === 'fp1'),
      );
      await store.completeIdempotent(
        scope,
        'k',
        { statusCode: 201, headers: { 'content-type': 'application/json' }, body: '{"a":1}' },
        60_000,
      );
      assert.deepEqual(await store.beginIdempotent(scope, 'k', 'fp2', 60_000), {
        state: 'done',
        fingerprint: 'fp1',
        response: { statusCode: 201, headers: { 'content-type': 'application/json' }, body: '{"a":1}' },
      });
      // Other scopes (API keys) are independent.
      assert.equal((await store.beginIdempotent(unique(), 'k', 'fp1', 60_000)).state, 'started');
    });

    it('abandoned and expired records free the key', async () => {
      const scope = unique();
      assert.equal((await store.beginIdempotent(scope, 'a', 'fp', 60_000)).state, 'started');
      await store.abandonIdempotent(scope, 'a');
      assert.equal((await store.beginIdempotent(scope, 'a', 'fp', 60_000)).state, 'started');
      assert.equal((await store.beginIdempotent(scope, 'b', 'fp', 200)).state, 'started');
      await new Promise((resolve) => setTimeout(resolve, 400));
      assert.equal(
        (await store.beginIdempotent(scope, 'b', 'other', 60_000)).state,
        'started',
        'an expired in-flight record is taken over',
      );
      await store.completeIdempotent(scope, 'b', { statusCode: 200, headers: {}, body: '' }, 200);
      await new Promise((resolve) => setTimeout(resolve, 400));
      assert.equal(
        (await store.beginIdempotent(scope, 'b', 'third', 60_000)).state,
        'started',
        'an expired answer is forgotten',
      );
      assert.ok((await store.purgeExpired()) >= 0);
    });

    it('counts rate-limit windows shared by every instance (where the store offers it)', async (t) => {
      if (!store.hitRateLimit) {
        t.skip(`${name} has no shared rate-limit counters (per-instance in memory, or the plugin's Redis store)`);
        return;
      }
      const key = `key:${unique()}`;
      const hits = await Promise.all(Array.from({ length: 10 }, () => store.hitRateLimit!(key, 300)));
      assert.deepEqual(
        hits.map((h) => h.current).sort((a, b) => a - b),
        [1, 2, 3, 4, 5, 6, 7, 8, 9, 10],
      );
      assert.ok(
        hits.every((h) => h.ttlMs >= 0 && h.ttlMs <= 300),
        JSON.stringify(hits),
      );
      await new Promise((resolve) => setTimeout(resolve, 500));
      assert.equal((await store.hitRateLimit(key, 300)).current, 1, 'a new window starts after the old one ends');
    });
  });
}
