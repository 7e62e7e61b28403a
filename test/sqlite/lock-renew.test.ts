/**
 * `renew` without `ttlMs` extends a lease by the TTL it was acquired with — not by a fixed 30 s —
 * wherever the renewal comes from: the lease object, another instance that only has the token,
 * or the HTTP API (a client that only keeps the token). Bounds are wide: a slow machine cannot
 * push the old behaviour (≈ 30 s) inside them.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs, type Lease } from '../../src/index.js';
import { rejectsWith } from '../support/assert.js';
import { openTestService, type TestService } from '../support/service.js';
import { sqliteForSuite } from '../support/sqlite.js';

describe("sqlite: renew without ttlMs keeps the lease's own TTL", () => {
  const env = sqliteForSuite();

  it('a long lease is extended by its own TTL, a short one is not stretched to 30 s', async () => {
    const long = await env.dibs.locks.acquire('long', { ttlMs: 600_000 });
    assert.equal(long.ttlMs, 600_000);
    const renewedLong = await env.dibs.locks.renew(long);
    assert.ok(renewedLong.validForMs > 300_000, `renewed for ${renewedLong.validForMs} ms`);
    assert.equal(renewedLong.ttlMs, 600_000);
    assert.equal(renewedLong.token, long.token, 'the token does not change');

    const short = await env.dibs.locks.acquire('short', { ttlMs: 2_000 });
    const renewedShort = await env.dibs.locks.renew(short);
    assert.ok(renewedShort.validForMs <= 2_000, `renewed for ${renewedShort.validForMs} ms`);
    // An explicit ttlMs still wins, and the lease keeps its own TTL for later renewals.
    const stretched = await env.dibs.locks.renew(short, { ttlMs: 600_000 });
    assert.ok(stretched.validForMs > 300_000);
    assert.ok((await env.dibs.locks.renew(stretched)).validForMs <= 2_000);
    await env.dibs.locks.release(long);
    await env.dibs.locks.release(short);
  });

  it("another instance with only the key and token renews by the lease's TTL and can release it", async () => {
    const lease = await env.dibs.locks.acquire('shared', { ttlMs: 600_000 });
    const other: Dibs = await openDibs(env.store);
    try {
      const bare = { key: 'shared', token: lease.token, limit: 1 } as Lease;
      assert.ok((await other.locks.renew(bare)).validForMs > 300_000);
      await other.locks.release(bare);
      assert.equal((await env.dibs.locks.inspect('shared')).holders.length, 0);
    } finally {
      await other.close();
    }
  });

  it("a token whose TTL suffix was tampered with is still only the owner's token", async () => {
    const lease = await env.dibs.locks.acquire('tamper', { ttlMs: 10_000 });
    const [storeToken] = lease.token.split('.');
    await rejectsWith(env.dibs.locks.release({ ...lease, token: `${storeToken}x.10000` }), 'not_owner');
    // Changing only the suffix is the same as passing ttlMs: allowed, the owner could do it anyway.
    assert.ok((await env.dibs.locks.renew({ ...lease, token: `${storeToken}.600000` })).validForMs > 300_000);
    await env.dibs.locks.release(lease);
  });
});

describe('HTTP: POST /v1/locks/:key/renew with only the token', () => {
  let svc: TestService;
  let auth: string;
  before(async () => {
    svc = await openTestService();
    auth = await svc.key('acme', ['locks:write']);
  });
  after(() => svc.close());

  it('extends the lease by the TTL it was acquired with', async () => {
    const acquired = await svc.call(auth, 'POST', '/v1/locks/nightly/acquire', { ttlMs: 600_000 });
    assert.equal(acquired.statusCode, 201, acquired.body);
    const lease = acquired.json() as Lease;
    assert.equal(lease.ttlMs, 600_000);
    const renewed = await svc.call(auth, 'POST', '/v1/locks/nightly/renew', { token: lease.token });
    assert.equal(renewed.statusCode, 200, renewed.body);
    assert.ok((renewed.json() as Lease).validForMs > 300_000, renewed.body);
    assert.equal((await svc.call(auth, 'POST', '/v1/locks/nightly/release', { token: lease.token })).statusCode, 204);
  });
});
