/**
 * The service on Redis with two instances on one schema: keys, idempotency records and the
 * per-key rate limit are shared through the store; tenants are kept apart.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { buildServer } from '../../src/service/app.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { deletePrefix, sharedRedisAvailable, SHARED_REDIS, testPrefix } from '../support/redis.js';

const skip = !(await sharedRedisAvailable());

describe('service on redis, two instances', { skip }, () => {
  const prefix = testPrefix();
  const store = `${SHARED_REDIS}?prefix=${prefix}`;
  let a: { dibs: Dibs; app: ReturnType<typeof buildServer> };
  let b: { dibs: Dibs; app: ReturnType<typeof buildServer> };
  before(async () => {
    const open = async () => {
      const dibs = await openDibs(store);
      const app = buildServer({ dibs, rateLimit: { max: 6, timeWindowMs: 60_000 } });
      await app.ready();
      return { dibs, app };
    };
    a = await open();
    b = await open();
  });
  after(async () => {
    for (const x of [a, b]) {
      await x?.app.close();
      await x?.dibs.close();
    }
    await deletePrefix(SHARED_REDIS, prefix);
  });

  it('shares keys, idempotency and the rate limit; keeps tenants apart', async () => {
    const { key } = await createApiKey(a.dibs.backend.service, { tenant: 'acme', name: 'pg', scopes: ['admin'] });
    const other = (await createApiKey(a.dibs.backend.service, { tenant: 'globex', name: 'pg', scopes: ['admin'] })).key;
    const call = (
      app: typeof a.app,
      method: 'GET' | 'POST',
      url: string,
      body?: unknown,
      headers: Record<string, string> = {},
      k = key,
    ) =>
      app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${k}`, ...(body ? { 'content-type': 'application/json' } : {}), ...headers },
        ...(body ? { payload: JSON.stringify(body) } : {}),
      });
    assert.equal((await call(a.app, 'POST', '/v1/pools', { name: 'rd' })).statusCode, 201);
    assert.equal((await call(b.app, 'POST', '/v1/pools/rd/codes', { codes: ['A', 'B', 'C'] })).statusCode, 200);
    const first = await call(a.app, 'POST', '/v1/pools/rd/claims', { claimant: 'ann' }, { 'idempotency-key': 'x1' });
    assert.equal(first.statusCode, 201);
    const retry = await call(b.app, 'POST', '/v1/pools/rd/claims', { claimant: 'ann' }, { 'idempotency-key': 'x1' });
    assert.equal(retry.headers['idempotent-replayed'], 'true');
    assert.equal(retry.body, first.body);
    assert.equal((await call(b.app, 'GET', '/v1/pools/rd', undefined, {}, other)).statusCode, 404, 'another tenant');
    // 4 requests so far for this key, on two instances: the 5th and 6th pass, the 7th is limited wherever it lands.
    assert.equal((await call(b.app, 'GET', '/v1/pools/rd')).statusCode, 200);
    assert.equal((await call(a.app, 'GET', '/v1/pools/rd')).statusCode, 200);
    const limited = await call(a.app, 'GET', '/v1/pools/rd');
    assert.equal(limited.statusCode, 429, limited.body);
    assert.equal(limited.json().error.code, 'rate_limited');
    assert.equal(
      (await call(a.app, 'GET', '/v1/pools', undefined, {}, other)).statusCode,
      200,
      'other keys are not limited',
    );
  });

  it('sells through the sale routes on either instance (reserve on one, confirm on the other)', async () => {
    const { key } = await createApiKey(a.dibs.backend.service, { tenant: 'shop', name: 'sales', scopes: ['admin'] });
    const call = (app: typeof a.app, method: 'GET' | 'POST', url: string, body?: unknown) =>
      app.inject({
        method,
        url,
        headers: { authorization: `Bearer ${key}`, ...(body ? { 'content-type': 'application/json' } : {}) },
        ...(body ? { payload: JSON.stringify(body) } : {}),
      });
    const created = await call(a.app, 'POST', '/v1/sales', {
      id: 'drop-1',
      sku: 'HOODIE',
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      cap: 1,
    });
    assert.equal(created.statusCode, 201, created.body);
    const reserved = await call(b.app, 'POST', '/v1/sales/drop-1/reservations', {
      customer: 'ann',
      quantity: 1,
      ttlMs: 60_000,
    });
    assert.equal(reserved.statusCode, 201, reserved.body);
    const confirmed = await call(a.app, 'POST', `/v1/reservations/${reserved.json().hold.id}/confirm`);
    assert.equal(confirmed.statusCode, 201, confirmed.body);
    const sale = await call(b.app, 'GET', '/v1/sales/drop-1');
    assert.deepEqual([sale.json().status, sale.json().stats], ['sold_out', { sold: 1, held: 0, available: 0 }]);
    assert.deepEqual((await call(a.app, 'GET', '/v1/sales/drop-1/audit')).json(), { violations: [] });
  });
});
