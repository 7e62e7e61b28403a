/** Checkout over HTTP: validate, redeem for an order (retry-safe), refund with unredeem, and their scopes. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { errorOf, openTestService, type TestService } from '../support/service.js';

describe('service: checkout routes', () => {
  let svc: TestService;
  let admin: string;
  let shop: string;
  before(async () => {
    svc = await openTestService();
    admin = await svc.key('default', ['admin']);
    shop = await svc.key('default', ['pools:read', 'pools:claim']);
    await svc.call(admin, 'POST', '/v1/pools', { name: 'promo' });
    await svc.dibs.pools.importCodes('promo', ['P-1', 'P-2']);
  });
  after(async () => svc?.close());

  it('validate → redeem (twice for one order) → another order 409 → refund needs pools:admin', async () => {
    const claimed = await svc.call(shop, 'POST', '/v1/pools/promo/claims', { claimant: 'alice' });
    const code = claimed.json().code as string;
    const valid = await svc.call(shop, 'POST', `/v1/pools/promo/codes/${code}/validate`, { claimant: 'alice' });
    assert.equal(valid.statusCode, 200);
    assert.equal(valid.json().valid, true);
    const wrong = await svc.call(shop, 'POST', `/v1/pools/promo/codes/${code}/validate`, { claimant: 'bob' });
    assert.deepEqual([wrong.json().valid, wrong.json().reason], [false, 'other_holder']);
    assert.deepEqual((await svc.call(shop, 'POST', '/v1/pools/promo/codes/NOPE/validate', {})).json(), {
      valid: false,
      reason: 'not_found',
      code: null,
    });

    const first = await svc.call(shop, 'POST', `/v1/pools/promo/codes/${code}/redeem`, {
      claimant: 'alice',
      orderId: 'ord-1',
    });
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json().orderId, 'ord-1');
    const retry = await svc.call(shop, 'POST', `/v1/pools/promo/codes/${code}/redeem`, {
      claimant: 'alice',
      orderId: 'ord-1',
    });
    assert.deepEqual(retry.json(), first.json());
    errorOf(
      await svc.call(shop, 'POST', `/v1/pools/promo/codes/${code}/redeem`, { orderId: 'ord-2' }),
      409,
      'already_redeemed',
    );
    errorOf(
      await svc.call(shop, 'POST', `/v1/pools/promo/codes/${code}/redeem`, { orderId: 42 }),
      400,
      'invalid_input',
    );
    errorOf(await svc.call(shop, 'POST', `/v1/pools/promo/codes/${code}/redeem`, { order: 'x' }), 400, 'invalid_input');

    errorOf(await svc.call(shop, 'POST', `/v1/pools/promo/codes/${code}/unredeem`, { orderId: 'ord-1' }), 403);
    const refunded = await svc.call(admin, 'POST', `/v1/pools/promo/codes/${code}/unredeem`, { orderId: 'ord-1' });
    assert.equal(refunded.statusCode, 200, refunded.body);
    assert.equal(refunded.json().status, 'claimed');
    errorOf(await svc.call(admin, 'POST', `/v1/pools/promo/codes/${code}/unredeem`, {}), 409, 'conflict');
    errorOf(await svc.call(admin, 'POST', '/v1/pools/nope/codes/X/unredeem', {}), 404, 'not_found');
  });

  it('holds, a code window and a multi-use code over HTTP', async () => {
    await svc.call(admin, 'POST', '/v1/pools', { name: 'walkin', publicCodes: true });
    await svc.dibs.pools.importCodes('walkin', ['W-1']);
    const held = await svc.call(shop, 'POST', '/v1/pools/walkin/codes/W-1/hold', { claimant: 'alice', ttlMs: 60_000 });
    assert.equal(held.statusCode, 200, held.body);
    assert.equal(held.json().hold.claimant, 'alice');
    errorOf(
      await svc.call(shop, 'POST', '/v1/pools/walkin/codes/W-1/hold', { claimant: 'bob', ttlMs: 60_000 }),
      409,
      'held',
    );
    errorOf(
      await svc.call(shop, 'POST', '/v1/pools/walkin/codes/W-1/redeem', { claimant: 'bob', orderId: 'b-1' }),
      409,
      'held',
    );
    errorOf(
      await svc.call(shop, 'POST', '/v1/pools/walkin/codes/W-1/hold', { claimant: 'bob', ttlMs: 5 }),
      400,
      'invalid_input',
    );
    errorOf(await svc.call(shop, 'POST', '/v1/pools/walkin/codes/W-1/hold', { claimant: 'bob' }), 400, 'invalid_input');
    const check = await svc.call(shop, 'POST', '/v1/pools/walkin/codes/W-1/validate', { claimant: 'bob' });
    assert.deepEqual([check.json().valid, check.json().reason], [false, 'held']);
    errorOf(await svc.call(shop, 'POST', '/v1/pools/walkin/codes/W-1/hold/release', { claimant: 'bob' }), 409, 'held');
    const released = await svc.call(shop, 'POST', '/v1/pools/walkin/codes/W-1/hold/release', { claimant: 'alice' });
    assert.equal(released.statusCode, 200, released.body);
    assert.equal(released.json().hold, undefined);

    errorOf(await svc.call(shop, 'PATCH', '/v1/pools/walkin/codes/W-1', { expiresAt: '2020-01-01T00:00:00Z' }), 403);
    const windowed = await svc.call(admin, 'PATCH', '/v1/pools/walkin/codes/W-1', {
      expiresAt: '2020-01-01T00:00:00Z',
    });
    assert.equal(windowed.statusCode, 200, windowed.body);
    assert.equal(windowed.json().expiresAt, '2020-01-01T00:00:00.000Z');
    errorOf(
      await svc.call(shop, 'POST', '/v1/pools/walkin/codes/W-1/redeem', { claimant: 'bob', orderId: 'b-1' }),
      409,
      'expired',
    );
    errorOf(await svc.call(admin, 'PATCH', '/v1/pools/walkin/codes/W-1', { expiresAt: 'later' }), 400, 'invalid_input');

    const multi = await svc.call(admin, 'POST', '/v1/pools/walkin/multi-use-codes', { code: 'WELCOME10', uses: 2 });
    assert.equal(multi.statusCode, 201, multi.body);
    assert.deepEqual(multi.json().uses, { max: 2, used: 0, remaining: 2, perClaimant: 1 });
    errorOf(
      await svc.call(admin, 'POST', '/v1/pools/walkin/multi-use-codes', { code: 'WELCOME10', uses: 2 }),
      409,
      'already_exists',
    );
    errorOf(
      await svc.call(admin, 'POST', '/v1/pools/walkin/multi-use-codes', { code: 'X', uses: -1 }),
      400,
      'invalid_input',
    );
    const used = await svc.call(shop, 'POST', '/v1/pools/walkin/codes/WELCOME10/redeem', {
      claimant: 'carol',
      orderId: 'c-1',
    });
    assert.equal(used.statusCode, 200, used.body);
    assert.equal(used.json().uses.remaining, 1);
    const left = await svc.call(shop, 'POST', '/v1/pools/walkin/codes/WELCOME10/validate', { claimant: 'dave' });
    assert.deepEqual([left.json().valid, left.json().code.uses.remaining], [true, 1]);
    errorOf(
      await svc.call(shop, 'POST', '/v1/pools/walkin/codes/WELCOME10/redeem', { claimant: 'carol', orderId: 'c-2' }),
      409,
      'limit_reached',
    );
    errorOf(
      await svc.call(shop, 'POST', '/v1/pools/walkin/codes/WELCOME10/redeem', { claimant: 'dave' }),
      400,
      'invalid_input',
    );
  });
});
