/**
 * Auth and tenants, route by route: every /v1 route answers 401 without a key (and with a bad or
 * revoked one), 403 with a key lacking its scope, and another tenant's objects are 404 (pools,
 * sales, holds) or a separate namespace (locks, counters, wishlists, events).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { SCOPES, grants } from '../../src/service/auth/keys.js';
import { errorOf, openTestService, type TestService } from '../support/service.js';

const sample: Record<string, string> = {
  pool: 'p1',
  code: 'C1',
  claimant: 'alice',
  sale: 's1',
  hold: 'hold_abc123',
  sku: 'SKU1',
  customer: 'alice',
  key: 'lock1',
  name: 'ctr1',
  id: '0123456789abcdef',
};
const fill = (url: string) => url.replace(/:(\w+)/g, (_, p: string) => sample[p] ?? 'x');

/** A well-formed body for each pool route, so that what answers is the tenant check, not validation. */
function poolRouteBody(method: string, url: string): unknown {
  if (method === 'GET') return undefined;
  if (url.endsWith('/claims')) return { claimant: 'mallory' };
  if (url.endsWith('/codes')) return { codes: ['X'] };
  if (url.endsWith('/hold')) return { claimant: 'mallory', ttlMs: 60_000 };
  if (url.endsWith('/multi-use-codes')) return { code: 'MULTI', uses: 10 };
  if (url.endsWith('/codes/:code')) return { expiresAt: null };
  if (method === 'PATCH') return { perClaimantLimit: 2 };
  return {};
}

describe('auth and tenants', () => {
  let svc: TestService;
  let acme: string;
  let globex: string;
  before(async () => {
    svc = await openTestService();
    acme = await svc.key('acme', ['admin']);
    globex = await svc.key('globex', ['admin']);
  });
  after(() => svc.close());

  it('every non-public route answers 401 without a key, with a malformed key and with an unknown key', async () => {
    const routes = svc.app.routeDocs.filter((r) => r.scope !== 'public');
    assert.ok(routes.length >= 35, `only ${routes.length} routes declared`);
    for (const r of routes) {
      const url = fill(r.url);
      const body = r.method === 'GET' ? undefined : {};
      errorOf(await svc.call(null, r.method, url, body), 401, 'unauthorized');
      errorOf(await svc.call('Bearer nope', r.method, url, body), 401, 'unauthorized');
      errorOf(await svc.call('Basic abc', r.method, url, body), 401, 'unauthorized');
      errorOf(
        await svc.call(`Bearer dibs_0123456789abcdef_${'A'.repeat(32)}`, r.method, url, body),
        401,
        'unauthorized',
      );
    }
    const res = await svc.call(null, 'GET', '/v1/pools');
    assert.match(String(res.headers['www-authenticate']), /^Bearer/);
    // Public routes stay public.
    for (const url of ['/healthz', '/readyz', '/openapi.json', '/docs'])
      assert.equal((await svc.call(null, 'GET', url)).statusCode, 200, url);
  });

  it('every route answers 403 to a key without its scope, and serves a key with it', async () => {
    for (const r of svc.app.routeDocs.filter((d) => d.scope !== 'public' && d.scope !== 'any')) {
      const lacking = SCOPES.filter((s) => !grants([s], r.scope as never));
      const key = await svc.key('acme', [lacking.find((s) => s !== 'admin')!]);
      errorOf(await svc.call(key, r.method, fill(r.url), r.method === 'GET' ? undefined : {}), 403, 'forbidden');
      // The right scope gets past auth (whatever the route then says about the input).
      const allowed = await svc.call(
        await svc.key('acme', [r.scope]),
        r.method,
        fill(r.url),
        r.method === 'GET' ? undefined : {},
      );
      assert.ok(
        ![401, 403].includes(allowed.statusCode),
        `${r.method} ${r.url} with ${r.scope}: ${allowed.statusCode} ${allowed.body}`,
      );
    }
  });

  it('family wildcards and admin grant a family; a revoked key is refused at once', async () => {
    const star = await svc.key('acme', ['pools:*']);
    assert.equal((await svc.call(star, 'GET', '/v1/pools')).statusCode, 200);
    errorOf(await svc.call(star, 'GET', '/v1/sales'), 403, 'forbidden');
    const created = await svc.call(acme, 'POST', '/v1/keys', { name: 'temp', scopes: ['pools:read'] });
    assert.equal(created.statusCode, 201, created.body);
    const { key, apiKey } = created.json() as { key: string; apiKey: { id: string; tenant: string } };
    assert.equal(apiKey.tenant, 'acme');
    assert.equal((await svc.call(`Bearer ${key}`, 'GET', '/v1/me')).json().tenant, 'acme');
    assert.equal((await svc.call(`Bearer ${key}`, 'GET', '/v1/pools')).statusCode, 200);
    errorOf(await svc.call(globex, 'DELETE', `/v1/keys/${apiKey.id}`), 404, 'not_found');
    assert.equal((await svc.call(acme, 'DELETE', `/v1/keys/${apiKey.id}`)).json().revokedAt !== null, true);
    errorOf(await svc.call(`Bearer ${key}`, 'GET', '/v1/pools'), 401, 'unauthorized');
    const listed = (await svc.call(acme, 'GET', '/v1/keys')).json() as { data: { tenant: string; hash?: string }[] };
    assert.ok(listed.data.every((k) => k.tenant === 'acme' && k.hash === undefined));
  });

  it("pools: another tenant's pool is 404 on every pool route, lists and events are per tenant", async () => {
    assert.equal((await svc.call(acme, 'POST', '/v1/pools', { name: 'p1', lowStockThreshold: 1 })).statusCode, 201);
    assert.equal((await svc.call(acme, 'POST', '/v1/pools/p1/codes', { codes: ['C1', 'C2'] })).statusCode, 200);
    const claim = await svc.call(acme, 'POST', '/v1/pools/p1/claims', { claimant: 'alice' });
    assert.equal(claim.statusCode, 201);
    assert.equal(claim.json().pool, 'p1', "answers use the tenant's own names");
    // The same name in another tenant is another pool.
    assert.equal((await svc.call(globex, 'POST', '/v1/pools', { name: 'p0' })).statusCode, 201);
    for (const r of svc.app.routeDocs.filter((d) => d.url.startsWith('/v1/pools/:pool'))) {
      const res = await svc.call(globex, r.method, fill(r.url), poolRouteBody(r.method, r.url));
      assert.equal(res.statusCode, 404, `${r.method} ${r.url}: ${res.body}`);
      const error = errorOf(res, 404, 'not_found');
      assert.doesNotMatch(error.message, /acme~/, 'no namespaced names leak');
    }
    const acmeList = (await svc.call(acme, 'GET', '/v1/pools')).json() as { data: { name: string }[] };
    assert.deepEqual(
      acmeList.data.map((p) => p.name),
      ['p1'],
    );
    const globexList = (await svc.call(globex, 'GET', '/v1/pools')).json() as { data: { name: string }[] };
    assert.deepEqual(
      globexList.data.map((p) => p.name),
      ['p0'],
    );
    // The default tenant (the CLI's) sees neither.
    const local = await svc.key('default', ['admin']);
    assert.deepEqual((await svc.call(local, 'GET', '/v1/pools')).json().data, []);
    // Names with the namespace separator are refused: a tenant cannot address another's objects.
    errorOf(await svc.call(globex, 'GET', '/v1/pools/acme~p1'), 400, 'invalid_input');
    errorOf(await svc.call(globex, 'POST', '/v1/pools', { name: 'acme~p2' }), 400, 'invalid_input');
    // Low-stock event (2 codes, threshold 1): acme sees it with its own pool name, globex does not.
    await svc.call(acme, 'POST', '/v1/pools/p1/claims', { claimant: 'bob' });
    const events = (await svc.call(acme, 'GET', '/v1/events')).json() as { data: { payload: { pool?: string } }[] };
    assert.ok(events.data.length > 0 && events.data.every((e) => e.payload.pool === 'p1'), JSON.stringify(events.data));
    assert.deepEqual((await svc.call(globex, 'GET', '/v1/events')).json().data, []);
    errorOf(await svc.call(globex, 'GET', '/v1/events?pool=p1'), 404, 'not_found');
    // The outbox holds every tenant's events: its status and delivery logs are the operator's
    // (the default tenant's admin keys); a tenant's admin key cannot read another's deliveries.
    const eventId = (events.data[0] as unknown as { id: string }).id;
    errorOf(await svc.call(globex, 'GET', `/v1/events/${eventId}/deliveries`), 404, 'not_found');
    errorOf(await svc.call(acme, 'GET', `/v1/events/${eventId}/deliveries`), 404, 'not_found');
    errorOf(await svc.call(globex, 'GET', '/v1/outbox'), 404, 'not_found');
    errorOf(await svc.call(acme, 'GET', '/v1/outbox/dead'), 404, 'not_found');
    errorOf(await svc.call(acme, 'GET', '/v1/outbox/endpoints'), 404, 'not_found');
    errorOf(await svc.call(acme, 'POST', `/v1/events/${eventId}/retry`), 404, 'not_found');
    const operator = await svc.key('default', ['admin']);
    assert.equal((await svc.call(operator, 'GET', `/v1/events/${eventId}/deliveries`)).statusCode, 200);
    assert.equal((await svc.call(operator, 'GET', '/v1/outbox')).statusCode, 200);
    assert.equal((await svc.call(operator, 'GET', '/v1/outbox/dead')).statusCode, 200);
    // no dispatcher in this test service: said, not an error
    assert.deepEqual((await svc.call(operator, 'GET', '/v1/outbox/endpoints')).json(), {
      dispatcher: false,
      since: null,
      data: [],
    });
    errorOf(await svc.call(operator, 'POST', '/v1/events/999999/retry'), 404, 'not_found');
    assert.equal((await svc.call(operator, 'POST', `/v1/events/${eventId}/retry`)).statusCode, 200);
  });

  it("pool lists page through a tenant's pools only", async () => {
    for (const name of ['a', 'b', 'c', 'd', 'e']) await svc.call(globex, 'POST', '/v1/pools', { name: `list-${name}` });
    const seen: string[] = [];
    let after: string | null = null;
    do {
      const page = (await svc.call(globex, 'GET', `/v1/pools?limit=2${after ? `&after=${after}` : ''}`)).json() as {
        data: { name: string }[];
        nextCursor: string | null;
      };
      seen.push(...page.data.map((p) => p.name));
      after = page.nextCursor;
    } while (after);
    assert.deepEqual(seen, ['list-a', 'list-b', 'list-c', 'list-d', 'list-e', 'p0']);
  });

  it("sales and holds: another tenant's sale and hold are 404; SKUs and wishlists are per tenant", async () => {
    const now = Date.now() + 300;
    const sale = await svc.call(acme, 'POST', '/v1/sales', {
      id: 's1',
      sku: 'SKU1',
      startsAt: new Date(now).toISOString(),
      endsAt: new Date(now + 3_600_000).toISOString(),
      cap: 10,
      perCustomerLimit: 5,
    });
    assert.equal(sale.statusCode, 201, sale.body);
    assert.equal(sale.json().id, 's1');
    assert.equal(sale.json().sku, 'SKU1');
    const generated = await svc.call(acme, 'POST', '/v1/sales', {
      sku: 'SKU2',
      startsAt: new Date(now).toISOString(),
      endsAt: new Date(now + 3_600_000).toISOString(),
    });
    assert.match(generated.json().id, /^sale_/);
    await new Promise((resolve) => setTimeout(resolve, 600)); // the sale goes live
    const hold = await svc.call(acme, 'POST', '/v1/sales/s1/reservations', { customer: 'alice', ttlMs: 60_000 });
    assert.equal(hold.statusCode, 201, hold.body);
    const holdId = hold.json().hold.id as string;
    assert.equal(hold.json().hold.saleId, 's1');
    for (const r of svc.app.routeDocs.filter(
      (d) => d.url.startsWith('/v1/sales/:sale') || d.url.startsWith('/v1/reservations/'),
    )) {
      const url = fill(r.url).replace('hold_abc123', holdId);
      const body =
        r.method === 'GET'
          ? undefined
          : r.url.endsWith('/claims')
            ? { customer: 'm' }
            : r.url.endsWith('/reservations')
              ? { customer: 'm', ttlMs: 60_000 }
              : r.method === 'PATCH'
                ? { cap: 20 }
                : {};
      errorOf(await svc.call(globex, r.method, url, body), 404, 'not_found');
    }
    assert.deepEqual((await svc.call(globex, 'GET', '/v1/sales')).json().data, []);
    assert.deepEqual(
      (await svc.call(acme, 'GET', '/v1/sales'))
        .json()
        .data.map((s: { id: string }) => s.id)
        .sort(),
      [generated.json().id, 's1'].sort(),
    );
    assert.deepEqual((await svc.call(globex, 'GET', '/v1/sales?sku=SKU1')).json().data, []);
    assert.equal(
      (
        await svc.call(acme, 'POST', '/v1/wishlist', {
          sku: 'SKU1',
          customer: 'alice',
          webhook: 'https://example.com/h',
        })
      ).statusCode,
      201,
    );
    assert.equal((await svc.call(acme, 'GET', '/v1/wishlist/SKU1')).json().data[0].sku, 'SKU1');
    assert.deepEqual((await svc.call(globex, 'GET', '/v1/wishlist/SKU1')).json().data, []);
    assert.equal((await svc.call(acme, 'POST', `/v1/reservations/${holdId}/confirm`)).statusCode, 201);
  });

  it('locks and counters are per tenant: the same key is a different lock, a foreign token releases nothing', async () => {
    const lease = await svc.call(acme, 'POST', '/v1/locks/lock2/acquire', { ttlMs: 60_000 });
    assert.equal(lease.statusCode, 201, lease.body);
    assert.equal(lease.json().key, 'lock2');
    // globex gets its own lock1 at once, and sees no holders of acme's.
    const theirs = await svc.call(globex, 'POST', '/v1/locks/lock2/acquire', { ttlMs: 60_000 });
    assert.equal(theirs.statusCode, 201, theirs.body);
    assert.equal((await svc.call(acme, 'GET', '/v1/locks/lock2')).json().holders.length, 1);
    const released = await svc.call(globex, 'POST', '/v1/locks/lock2/release', { token: lease.json().token });
    assert.ok(released.statusCode >= 400 && released.statusCode < 500, released.body);
    assert.equal((await svc.call(acme, 'GET', '/v1/locks/lock2')).json().holders[0].fence, lease.json().fence);
    assert.equal((await svc.call(acme, 'POST', '/v1/counters/ctr1', { by: 5 })).json().value, 5);
    assert.equal((await svc.call(globex, 'GET', '/v1/counters/ctr1')).json().value, 0);
    assert.equal((await svc.call(acme, 'GET', '/v1/counters/ctr1')).json().name, 'ctr1');
    errorOf(await svc.call(acme, 'GET', '/v1/counters/a~b'), 400, 'invalid_input');
  });
});

describe('routes registered without a declaration', () => {
  it('are denied by default: admin keys of the default tenant only', async () => {
    const { buildServer } = await import('../../src/service/app.js');
    const { openTempSqlite } = await import('../support/sqlite.js');
    const { createApiKey } = await import('../../src/service/auth/keys.js');
    const env = await openTempSqlite();
    const app = buildServer({ dibs: env.dibs, rateLimit: false });
    app.get('/v1/undeclared', async () => ({ ok: true }));
    await app.ready();
    try {
      const key = async (tenant: string, scopes: string[]) =>
        `Bearer ${(await createApiKey(env.dibs.backend.service, { tenant, name: 't', scopes })).key}`;
      assert.equal((await app.inject({ method: 'GET', url: '/v1/undeclared' })).statusCode, 401);
      assert.equal(
        (
          await app.inject({
            method: 'GET',
            url: '/v1/undeclared',
            headers: { authorization: await key('default', ['pools:*']) },
          })
        ).statusCode,
        403,
      );
      assert.equal(
        (
          await app.inject({
            method: 'GET',
            url: '/v1/undeclared',
            headers: { authorization: await key('acme', ['admin']) },
          })
        ).statusCode,
        404,
      );
      assert.equal(
        (
          await app.inject({
            method: 'GET',
            url: '/v1/undeclared',
            headers: { authorization: await key('default', ['admin']) },
          })
        ).statusCode,
        200,
      );
    } finally {
      await app.close();
      await env.cleanup();
    }
  });
});
