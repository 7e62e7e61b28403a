/**
 * The OpenAPI contract, operation by operation: a tour that makes every operation of the document
 * answer with success at least once, each answer checked by svc.call against the documented status
 * and schema (test/support/openapi-contract.ts). The last test fails when an operation was never
 * answered with a 2xx — a new route without a tour step, or a schema nobody ever checked.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { assertKeepsContract, openTestService, type TestService } from '../support/service.js';

describe('OpenAPI contract: every operation answers as documented', () => {
  let svc: TestService;
  let admin: string;
  let created = 0;
  /** A call that must succeed (2xx); the contract check runs inside svc.call. */
  const ok = async (
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) => {
    const res = await svc.call(admin, method, url, body, headers);
    assert.ok(
      res.statusCode >= 200 && res.statusCode < 300,
      `${method} ${url} → ${res.statusCode} ${res.body.slice(0, 300)}`,
    );
    return res;
  };
  const json = async <T>(
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    body?: unknown,
    headers?: Record<string, string>,
  ) => (await ok(method, url, body, headers)).json() as T;

  before(async () => {
    svc = await openTestService();
    admin = await svc.key('default', ['admin']);
  });
  after(() => svc.close());

  it('operations: health, readiness, keys, metrics, the document, the dashboard', async () => {
    await ok('GET', '/healthz');
    await ok('GET', '/readyz');
    await ok('GET', '/v1/me');
    const key = await json<{ apiKey: { id: string } }>('POST', '/v1/keys', { name: 'tour', scopes: ['pools:read'] });
    await ok('GET', '/v1/keys');
    await ok('DELETE', `/v1/keys/${key.apiKey.id}`);
    await ok('GET', '/metrics');
    await ok('GET', '/openapi.json');
    const page = await ok('GET', '/');
    const asset = /src="\/dashboard\/([\w.-]+)"/.exec(page.body)?.[1];
    assert.ok(asset, 'the page loads a dashboard script');
    await ok('GET', `/dashboard/${asset}`);
  });

  it('pools: create, import, claim and replay, holds, redemption, windows, multi-use, generate, export, forecasts, events, delete', async () => {
    await ok('POST', '/v1/pools', { name: 'tour', perClaimantLimit: 2, lowStockThreshold: 4 });
    await ok('GET', '/v1/pools');
    await ok('GET', '/v1/pools/tour');
    await ok('PATCH', '/v1/pools/tour', { metadata: { campaign: 'contract' } });
    await ok('POST', '/v1/pools/tour/codes', { codes: ['T1', 'T2', 'T3', 'T4', 'T5', 'T6'] });
    const first = await ok('POST', '/v1/pools/tour/claims', { claimant: 'alice' }, { 'idempotency-key': 'tour-1' });
    assert.equal(first.statusCode, 201);
    const replay = await ok('POST', '/v1/pools/tour/claims', { claimant: 'alice' }, { 'idempotency-key': 'tour-1' });
    assert.equal(replay.body, first.body, 'the replay answers the stored response');
    const alice = (first.json() as { code: string }).code;
    await ok('GET', '/v1/pools/tour/claimants/alice');
    await ok('GET', `/v1/pools/tour/codes/${alice}`);
    await ok('POST', `/v1/pools/tour/codes/${alice}/hold`, { claimant: 'alice', ttlMs: 60_000 });
    await ok('POST', `/v1/pools/tour/codes/${alice}/hold/release`, { claimant: 'alice' });
    await ok('POST', `/v1/pools/tour/codes/${alice}/validate`, { claimant: 'alice' });
    await ok('POST', `/v1/pools/tour/codes/${alice}/redeem`, { claimant: 'alice', orderId: 'order-1' });
    await ok('POST', `/v1/pools/tour/codes/${alice}/unredeem`, { orderId: 'order-1' });
    await ok('POST', `/v1/pools/tour/codes/${alice}/release`, { claimant: 'alice' });
    const bob = (await json<{ code: string }>('POST', '/v1/pools/tour/claims', { claimant: 'bob' })).code;
    await ok('POST', `/v1/pools/tour/codes/${bob}/revoke`);
    const free = ['T1', 'T2', 'T3', 'T4', 'T5', 'T6'].find((c) => c !== alice && c !== bob)!;
    await ok('PATCH', `/v1/pools/tour/codes/${free}`, { expiresAt: new Date(Date.now() + 3_600_000).toISOString() });
    await ok('POST', '/v1/pools/tour/multi-use-codes', { code: 'WELCOME', uses: 5 });
    await ok('POST', '/v1/pools/tour/generate', { count: 5, length: 8 });
    await ok('GET', '/v1/pools/tour/audit');
    const csv = await ok('GET', '/v1/pools/tour/export');
    assert.match(csv.headers['content-type'] as string, /^text\/csv/);
    await ok('GET', '/v1/pools/tour/forecast');
    await ok('PUT', '/v1/pools/tour/forecast/alert', { withinMs: 600_000 });
    await ok('GET', '/v1/pools/tour/claim-rate');

    // The unredeem above recorded an event; its delivery log is readable.
    const events = await json<{ data: { id: string; type: string }[] }>('GET', '/v1/events?pool=tour');
    const event = events.data.find((e) => e.type === 'code.unredeemed');
    assert.ok(event, `a code.unredeemed event among ${JSON.stringify(events.data.map((e) => e.type))}`);
    await ok('GET', `/v1/events/${event.id}/deliveries`);
    await ok('GET', '/v1/outbox');
    await ok('GET', '/v1/outbox/endpoints');
    await ok('GET', '/v1/outbox/dead');
    // not delivered (no dispatcher here): retrying makes it due now
    await ok('POST', `/v1/events/${event.id}/retry`);

    await ok('POST', '/v1/pools', { name: 'gone' });
    await ok('DELETE', '/v1/pools/gone');
    created++;
  });

  it('carts: hold over two sales, read, confirm and replay, cancel', async () => {
    const startsAt = new Date().toISOString();
    const endsAt = new Date(Date.now() + 3_600_000).toISOString();
    await ok('POST', '/v1/sales', { id: 'cart-a', sku: 'SKU-CART-A', startsAt, endsAt, cap: 10, perCustomerLimit: 2 });
    await ok('POST', '/v1/sales', { id: 'cart-b', sku: 'SKU-CART-B', startsAt, endsAt, cap: 10, perCustomerLimit: 2 });
    const lines = [
      { sale: 'cart-a', quantity: 1 },
      { sale: 'cart-b', quantity: 2 },
    ];
    const cart = (await json<{ cart: { id: string } }>('POST', '/v1/carts', { customer: 'k1', lines, ttlMs: 60_000 }))
      .cart.id;
    await ok('GET', `/v1/carts/${cart}`);
    assert.equal((await ok('POST', `/v1/carts/${cart}/confirm`)).statusCode, 201);
    assert.equal(
      (await ok('POST', `/v1/carts/${cart}/confirm`)).statusCode,
      200,
      'confirming again replays the orders',
    );
    const other = (
      await json<{ cart: { id: string } }>(
        'POST',
        '/v1/carts',
        { customer: 'k2', lines, ttlMs: 60_000 },
        { 'idempotency-key': 'k2-cart' },
      )
    ).cart.id;
    await ok('POST', `/v1/carts/${other}/cancel`);
  });

  it('sales: create, buy, reserve, confirm and replay, cancel, audit, forecasts, waiting room, wishlist', async () => {
    // far enough ahead for a loaded machine to create the sales and join early before the opening
    const opensAt = Date.now() + 1500;
    const startsAt = new Date(opensAt).toISOString();
    const endsAt = new Date(Date.now() + 3_600_000).toISOString();
    await ok('POST', '/v1/sales', { id: 'tour', sku: 'SKU-TOUR', startsAt, endsAt, cap: 50, perCustomerLimit: 5 });
    await ok('POST', '/v1/sales', { id: 'roomy', sku: 'SKU-ROOM', startsAt, endsAt, cap: 20, perCustomerLimit: 2 });
    await ok('POST', '/v1/sales', { id: 'doomed', sku: 'SKU-DOOM', startsAt, endsAt, cap: 5 });
    await ok('POST', '/v1/sales', { id: 'fairy', sku: 'SKU-FAIR', startsAt, endsAt, cap: 5 });
    await ok('PUT', '/v1/sales/fairy/waiting-room', {
      admitPerSecond: 100,
      windowMs: 60_000,
      fairStart: true,
      verification: true,
    });
    const early = await json<{ token: string; place: number | null }>('POST', '/v1/sales/fairy/waiting-room/tickets', {
      customer: 'e1',
    });
    assert.equal(early.place, null, 'placed by the draw at the opening');
    await ok('GET', '/v1/sales');
    await ok('GET', '/v1/sales/tour');
    await ok('PATCH', '/v1/sales/tour', { metadata: { drop: 'contract' } });
    await ok('POST', '/v1/sales/doomed/cancel');
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, opensAt - Date.now()) + 100)); // live

    await ok('POST', '/v1/sales/tour/claims', { customer: 'c1' });
    const hold = (
      await json<{ hold: { id: string } }>('POST', '/v1/sales/tour/reservations', { customer: 'c2', ttlMs: 60_000 })
    ).hold.id;
    await ok('GET', `/v1/reservations/${hold}`);
    assert.equal((await ok('POST', `/v1/reservations/${hold}/confirm`)).statusCode, 201);
    assert.equal(
      (await ok('POST', `/v1/reservations/${hold}/confirm`)).statusCode,
      200,
      'confirming again replays the order',
    );
    const other = (
      await json<{ hold: { id: string } }>('POST', '/v1/sales/tour/reservations', { customer: 'c3', ttlMs: 60_000 })
    ).hold.id;
    assert.deepEqual(
      (await json<{ data: { id: string }[] }>('GET', '/v1/sales/tour/holds?customer=c3')).data.map((h) => h.id),
      [other],
    );
    await ok('POST', `/v1/reservations/${other}/cancel`);
    await ok('GET', '/v1/sales/tour/audit');
    await ok('GET', '/v1/sales/tour/forecast');
    await ok('PUT', '/v1/sales/tour/forecast/alert', { withinMs: 600_000 });

    await ok('PUT', '/v1/sales/roomy/waiting-room', { admitPerSecond: 1000, windowMs: 60_000 });
    await ok('GET', '/v1/sales/roomy/waiting-room');
    const ticket = await json<{ token: string }>('POST', '/v1/sales/roomy/waiting-room/tickets', { customer: 'w1' });
    const bearer = { 'dibs-ticket': ticket.token };
    for (let i = 0; ; i++) {
      const t = await json<{ status: string }>('GET', '/v1/sales/roomy/waiting-room/tickets/w1', undefined, bearer);
      if (t.status === 'admitted') break;
      assert.ok(i < 100, `ticket still ${t.status}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    // an admitted ticket can change no more: the stream sends it and ends
    const stream = await svc.app.inject({
      method: 'GET',
      url: `/v1/sales/roomy/waiting-room/tickets/w1/events?ticket=${encodeURIComponent(ticket.token)}`,
      headers: { authorization: admin },
    });
    assertKeepsContract(svc.contract, 'GET', '/v1/sales/roomy/waiting-room/tickets/w1/events', stream);
    assert.equal(stream.statusCode, 200);
    assert.match(stream.body, /event: ticket/);
    assert.equal(
      (await ok('POST', '/v1/sales/roomy/waiting-room/reservations', { customer: 'w1', ttlMs: 60_000 }, bearer))
        .statusCode,
      201,
    );
    assert.equal(
      (await ok('POST', '/v1/sales/roomy/waiting-room/reservations', { customer: 'w1', ttlMs: 60_000 }, bearer))
        .statusCode,
      200,
      'a retry returns the same hold',
    );

    const verified = await json<{ status: string; verified: boolean; place: number }>(
      'POST',
      '/v1/sales/fairy/waiting-room/tickets/e1/verification',
      undefined,
      { 'dibs-ticket': early.token },
    );
    assert.deepEqual([verified.status, verified.verified, verified.place], ['admitted', true, 1]);
    const fairRoom = await json<{ draw: { seed: string; preQueue: number } }>('GET', '/v1/sales/fairy/waiting-room');
    assert.equal(fairRoom.draw.preQueue, 1);

    await ok('POST', '/v1/wishlist', { sku: 'SKU-TOUR', customer: 'fan', email: 'fan@example.com' });
    await ok('GET', '/v1/wishlist/SKU-TOUR');
    await ok('DELETE', '/v1/wishlist/SKU-TOUR/fan');
    created++;
  });

  it('locks and counters: acquire, renew, inspect, release; add, read, delete', async () => {
    const lease = await json<{ token: string }>('POST', '/v1/locks/tour/acquire', { ttlMs: 10_000 });
    await ok('POST', '/v1/locks/tour/renew', { token: lease.token, ttlMs: 20_000 });
    await ok('GET', '/v1/locks/tour');
    assert.ok(
      (await json<{ data: { key: string; lastFence: number }[] }>('GET', '/v1/locks?limit=200')).data.some(
        (l) => l.key === 'tour' && l.lastFence > 0,
      ),
    );
    await ok('POST', '/v1/locks/tour/release', { token: lease.token });
    await ok('POST', '/v1/counters/visits', { by: 3 });
    await ok('GET', '/v1/counters/visits');
    assert.deepEqual(
      (await json<{ data: { name: string; value: number }[] }>('GET', '/v1/counters?after=visits-')).data,
      [],
    );
    assert.deepEqual(
      (await json<{ data: { name: string; value: number }[] }>('GET', '/v1/counters')).data.find(
        (c) => c.name === 'visits',
      )?.value,
      3,
    );
    await ok('DELETE', '/v1/counters/visits');
    created++;
  });

  it('limits: define, list, read, change, take (admitted and denied), peek, wait, reset, delete', async () => {
    await ok('POST', '/v1/limits', { name: 'tour', algorithm: 'token-bucket', limit: 1, periodMs: 3_600_000 });
    await ok('GET', '/v1/limits');
    await ok('GET', '/v1/limits/tour');
    await ok('PATCH', '/v1/limits/tour', { limit: 2, burst: 1 });
    assert.equal((await json<{ allowed: boolean }>('POST', '/v1/limits/tour/take', { key: 'alice' })).allowed, true);
    const denied = await ok('POST', '/v1/limits/tour/take', { key: 'alice' });
    assert.equal((denied.json() as { allowed: boolean }).allowed, false);
    assert.ok(Number(denied.headers['retry-after']) > 1700, `Retry-After ${denied.headers['retry-after']} s`);
    // peek answers like a take would, and takes nothing: the key is still denied after it
    assert.equal((await json<{ allowed: boolean }>('GET', '/v1/limits/tour/peek?key=alice')).allowed, false);
    assert.equal((await json<{ allowed: boolean }>('GET', '/v1/limits/tour/peek?key=bob')).allowed, true);
    await ok('POST', '/v1/limits/tour/reset', { key: 'alice' });
    assert.equal(
      (await json<{ allowed: boolean }>('POST', '/v1/limits/tour/wait', { key: 'alice', waitMs: 5000 })).allowed,
      true,
    );
    await ok('DELETE', '/v1/limits/tour');
    created++;
  });

  it('every operation of the document was answered with a documented success at least once', () => {
    assert.equal(created, 4, 'the tours above ran');
    const doc = svc.app.routeDocs;
    const missing = doc
      .map((r) => `${r.method} ${r.url.replace(/:(\w+)/g, '{$1}')}`)
      .filter((op) => ![...svc.contract.seen].some((seen) => seen.startsWith(`${op} `) && /\s2\d\d$/.test(seen)));
    assert.deepEqual(missing, [], 'operations never answered 2xx in the tour: add a step (and so check their schemas)');
  });
});
