import assert from 'node:assert/strict';
import { it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { buildServer } from '../../src/service/app.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { serviceStoreConformance } from '../conformance/service-store.js';
import { testPrefix, onRedisStores } from '../support/redis.js';

await onRedisStores(serviceStoreConformance, (url) => {
  it("rate-limits per key through the cluster (the plugin's Redis store on a Cluster client)", async () => {
    const dibs = await openDibs(`${url()}?prefix=${testPrefix()}`);
    const app = buildServer({ dibs, rateLimit: { max: 3, timeWindowMs: 60_000 } });
    try {
      const { key } = await createApiKey(dibs.backend.service, { name: 'c', scopes: ['pools:read'] });
      const statuses = [];
      for (let i = 0; i < 4; i++)
        statuses.push(
          (await app.inject({ method: 'GET', url: '/v1/pools', headers: { authorization: `Bearer ${key}` } }))
            .statusCode,
        );
      assert.deepEqual(statuses, [200, 200, 200, 429]);
    } finally {
      await app.close();
      await dibs.close();
    }
  });
});
