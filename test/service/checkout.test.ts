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
    assert.deepEqual((await svc.call(shop, 'POST', '/v1/pools/promo/codes/NOPE/validate', {})).json(), { valid: false, reason: 'not_found', code: null });

    const first = await svc.call(shop, 'POST', `/v1/pools/promo/codes/${code}/redeem`, { claimant: 'alice', orderId: 'ord-1' });
    assert.equal(first.statusCode, 200, first.body);
    assert.equal(first.json().orderId, 'ord-1');
    const retry = await svc.call(shop, 'POST', `/v1/pools/promo/codes/${code}/redeem`, { claimant: 'alice', orderId: 'ord-1' });
    assert.deepEqual(retry.json(), first.json());
    errorOf(await svc.call(shop, 'POST', `/v1/pools/promo/codes/${code}/redeem`, { orderId: 'ord-2' }), 409, 'already_redeemed');
    errorOf(await svc.call(shop, 'POST', `/v1/pools/promo/codes/${code}/redeem`, { orderId: 42 }), 400, 'invalid_input');
    errorOf(await svc.call(shop, 'POST', `/v1/pools/promo/codes/${code}/redeem`, { order: 'x' }), 400, 'invalid_input');

    errorOf(await svc.call(shop, 'POST', `/v1/pools/promo/codes/${code}/unredeem`, { orderId: 'ord-1' }), 403);
    const refunded = await svc.call(admin, 'POST', `/v1/pools/promo/codes/${code}/unredeem`, { orderId: 'ord-1' });
    assert.equal(refunded.statusCode, 200, refunded.body);
    assert.equal(refunded.json().status, 'claimed');
    errorOf(await svc.call(admin, 'POST', `/v1/pools/promo/codes/${code}/unredeem`, {}), 409, 'conflict');
    errorOf(await svc.call(admin, 'POST', '/v1/pools/nope/codes/X/unredeem', {}), 404, 'not_found');
  });
});
