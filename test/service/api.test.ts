/** The HTTP contract, route by route, through Fastify's inject against a real SQLite store. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { FastifyInstance, LightMyRequestResponse } from 'fastify';
import { buildServer } from '../../src/service/app.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { openTempSqlite } from '../support/sqlite.js';

describe('HTTP API', () => {
  let env: Awaited<ReturnType<typeof openTempSqlite>>;
  let app: FastifyInstance;
  let authorization: string;
  before(async () => {
    env = await openTempSqlite();
    app = buildServer({ dibs: env.dibs });
    await app.ready();
    authorization = `Bearer ${(await createApiKey(env.dibs.backend.service, { name: 'api test', scopes: ['admin'] })).key}`;
  });
  after(async () => {
    await app.close();
    await env.cleanup();
  });

  const inject = (options: {
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
    url: string;
    payload?: string;
    headers?: Record<string, string>;
  }) => app.inject({ ...options, headers: { authorization, ...options.headers } });
  const json = (
    method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
    url: string,
    body?: unknown,
    headers: Record<string, string> = {},
  ) =>
    inject({
      method,
      url,
      ...(body === undefined
        ? {}
        : { payload: JSON.stringify(body), headers: { 'content-type': 'application/json', ...headers } }),
    });
  const errorOf = (res: LightMyRequestResponse) =>
    (res.json() as { error: { code: string; message: string; field?: string } }).error;
  const expectError = (res: LightMyRequestResponse, status: number, code: string, field?: string) => {
    assert.equal(res.statusCode, status, res.body);
    const error = errorOf(res);
    assert.equal(error.code, code, res.body);
    assert.equal(typeof error.message, 'string');
    if (field) assert.equal(error.field, field, res.body);
  };
  const makePool = async (name: string, codes: string[], extra: Record<string, unknown> = {}) => {
    assert.equal((await json('POST', '/v1/pools', { name, ...extra })).statusCode, 201);
    if (codes.length) assert.equal((await json('POST', `/v1/pools/${name}/codes`, { codes })).statusCode, 200);
  };

  describe('pools', () => {
    it('creates, reads, lists, updates and deletes pools', async () => {
      const created = await json('POST', '/v1/pools', {
        name: 'spring',
        perClaimantLimit: 2,
        lowStockThreshold: 5,
        metadata: { a: 1 },
      });
      assert.equal(created.statusCode, 201);
      assert.equal(created.json().perClaimantLimit, 2);
      expectError(await json('POST', '/v1/pools', { name: 'spring' }), 409, 'already_exists', 'name');
      const got = await json('GET', '/v1/pools/spring');
      assert.deepEqual(got.json().stats, { total: 0, free: 0, claimed: 0, redeemed: 0, revoked: 0 });
      const list = await json('GET', '/v1/pools?limit=1');
      assert.equal(list.json().data.length, 1);
      assert.ok('nextCursor' in list.json());
      assert.equal((await json('PATCH', '/v1/pools/spring', { perClaimantLimit: 3 })).json().perClaimantLimit, 3);
      assert.equal((await json('DELETE', '/v1/pools/spring')).statusCode, 204);
      expectError(await json('GET', '/v1/pools/spring'), 404, 'not_found');
    });

    it('answers user mistakes with 4xx and the error shape', async () => {
      expectError(
        await inject({
          method: 'POST',
          url: '/v1/pools',
          payload: '{"name":',
          headers: { 'content-type': 'application/json' },
        }),
        400,
        'invalid_input',
      );
      expectError(
        await inject({
          method: 'POST',
          url: '/v1/pools',
          payload: '',
          headers: { 'content-type': 'application/json' },
        }),
        400,
        'invalid_input',
      );
      expectError(await json('POST', '/v1/pools', []), 400, 'invalid_input', 'body');
      expectError(await json('POST', '/v1/pools', {}), 400, 'invalid_input', 'name');
      expectError(await json('POST', '/v1/pools', { name: 'x', colour: 'red' }), 400, 'invalid_input');
      expectError(
        await json('POST', '/v1/pools', { name: 'x', perClaimantLimit: 'three' }),
        400,
        'invalid_input',
        'perClaimantLimit',
      );
      expectError(
        await inject({
          method: 'POST',
          url: '/v1/pools',
          payload: '<pool/>',
          headers: { 'content-type': 'application/xml' },
        }),
        415,
        'unsupported_media_type',
      );
      expectError(
        await inject({
          method: 'POST',
          url: '/v1/pools',
          payload: JSON.stringify({ name: 'big', metadata: { blob: 'x'.repeat(2 * 1024 * 1024) } }),
          headers: { 'content-type': 'application/json' },
        }),
        413,
        'payload_too_large',
      );
      expectError(await json('GET', '/v1/nothing-here'), 404, 'not_found');
      expectError(await json('GET', '/v1/pools?limit=abc'), 400, 'invalid_input');
      expectError(await json('GET', '/v1/pools/bad%20name'), 400, 'invalid_input', 'pool');
    });
  });

  describe('codes and claims', () => {
    it('imports JSON lists and streamed CSV with header, blanks and duplicates', async () => {
      await makePool('imports', []);
      const list = await json('POST', '/v1/pools/imports/codes', { codes: ['A', 'B', 'A', ''] });
      assert.deepEqual(list.json(), {
        imported: 2,
        duplicates: 1,
        invalid: 1,
        firstInvalid: { index: 3, field: 'code', message: 'must not be blank' },
      });
      const csv = await inject({
        method: 'POST',
        url: '/v1/pools/imports/codes',
        payload: `code\nC\n\nD\nA\n${'x'.repeat(200)}\n`,
        headers: { 'content-type': 'text/csv' },
      });
      assert.deepEqual(csv.json(), {
        imported: 2,
        duplicates: 1,
        invalid: 1,
        firstInvalid: { line: 6, field: 'code', message: 'at most 128 characters' },
      });
      const plain = await inject({
        method: 'POST',
        url: '/v1/pools/imports/codes',
        payload: 'E\nF',
        headers: { 'content-type': 'text/plain; charset=utf-8' },
      });
      assert.deepEqual(plain.json(), { imported: 2, duplicates: 0, invalid: 0 });
      expectError(await json('POST', '/v1/pools/imports/codes', { codes: 'A,B' }), 400, 'invalid_input', 'codes');
      expectError(await json('POST', '/v1/pools/unknown/codes', { codes: ['A'] }), 404, 'not_found');
      expectError(
        await inject({
          method: 'POST',
          url: '/v1/pools/unknown/codes',
          payload: 'A\n',
          headers: { 'content-type': 'text/csv' },
        }),
        404,
        'not_found',
      );
    });

    it('imports codes with their own windows: JSON objects beside strings, CSV columns; bad entries counted, bad shapes 400', async () => {
      await makePool('windows', [], { perClaimantLimit: 10 });
      const url = '/v1/pools/windows/codes';
      const list = await json('POST', url, {
        codes: [
          'W1',
          { code: 'W2', expiresAt: '2000-01-01T00:00:00Z' },
          { code: 'W3', startsAt: '2000-01-01T01:00:00+01:00', expiresAt: null },
          { code: 'W4', startsAt: 'tomorrow' },
          { code: 'W5', until: 'x' },
        ],
      });
      assert.equal(list.statusCode, 200, list.body);
      assert.deepEqual(list.json(), {
        imported: 3,
        duplicates: 0,
        invalid: 2,
        firstInvalid: {
          index: 3,
          field: 'startsAt',
          message: 'must be an ISO 8601 timestamp, e.g. 2026-11-27T09:00:00Z',
        },
      });
      assert.equal((await json('GET', `${url}/W3`)).json().startsAt, '2000-01-01T00:00:00.000Z', 'normalised to UTC');
      const csv = await inject({
        method: 'POST',
        url,
        payload: 'code,valid_from,valid_until\nW6,,2999-01-01T00:00:00Z\nW7,2999-01-01T00:00:00Z,\nW8,,31/12/2999\n',
        headers: { 'content-type': 'text/csv' },
      });
      assert.deepEqual(csv.json(), {
        imported: 2,
        duplicates: 0,
        invalid: 1,
        firstInvalid: {
          line: 4,
          field: 'valid_until',
          message: 'must be an ISO 8601 timestamp, e.g. 2026-11-27T09:00:00Z',
        },
      });
      const claimed = await json('POST', '/v1/pools/windows/claims', { claimant: 'alice', count: 10 });
      assert.deepEqual(
        [...(claimed.json().codes as string[])].sort(),
        ['W1', 'W3', 'W6'],
        'W2 expired, W7 not yet valid',
      );
      const exported = await json('GET', '/v1/pools/windows/export');
      assert.ok(
        exported.body.includes('W6,claimed,alice,') && exported.body.includes(',2999-01-01T00:00:00.000Z\n'),
        exported.body,
      );
      // shapes that are not a code list at all are 400s, never 5xx
      expectError(await json('POST', url, { codes: { code: 'W9' } }), 400, 'invalid_input', 'codes');
      expectError(
        await inject({
          method: 'POST',
          url,
          payload: 'code,starts_at,valid_from\nW9,,\n',
          headers: { 'content-type': 'text/csv' },
        }),
        400,
        'invalid_input',
        'codes',
      );
      expectError(
        await inject({
          method: 'POST',
          url,
          payload: 'expires_at\n2999-01-01T00:00:00Z\n',
          headers: { 'content-type': 'text/csv' },
        }),
        400,
        'invalid_input',
        'codes',
      );
      assert.equal((await json('GET', '/v1/pools/windows')).json().stats.total, 5, 'refused imports wrote nothing');
    });

    it('claims: 201 claimed, 200 already-held, 409 sold_out, replay by header or body key', async () => {
      await makePool('claims', ['ONLY-1', 'ONLY-2']);
      const first = await json('POST', '/v1/pools/claims/claims', { claimant: 'alice' }, { 'idempotency-key': 'k-1' });
      assert.equal(first.statusCode, 201);
      assert.equal(first.json().status, 'claimed');
      const replay = await json('POST', '/v1/pools/claims/claims', { claimant: 'alice', idempotencyKey: 'k-1' });
      assert.equal(replay.statusCode, 201);
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.equal(replay.json().code, first.json().code);
      const again = await json('POST', '/v1/pools/claims/claims', { claimant: 'alice' });
      assert.equal(again.statusCode, 200);
      assert.equal(again.json().status, 'already-held');
      assert.equal((await json('POST', '/v1/pools/claims/claims', { claimant: 'bob' })).statusCode, 201);
      expectError(await json('POST', '/v1/pools/claims/claims', { claimant: 'carol' }), 409, 'sold_out');
      expectError(
        await json(
          'POST',
          '/v1/pools/claims/claims',
          { claimant: 'dave', idempotencyKey: 'a' },
          { 'idempotency-key': 'b' },
        ),
        400,
        'invalid_input',
        'idempotencyKey',
      );
      expectError(
        await json('POST', '/v1/pools/claims/claims', { claimant: 'bob', idempotencyKey: 'k-1' }),
        409,
        'conflict',
        'idempotencyKey',
      );
      expectError(await json('POST', '/v1/pools/claims/claims', {}), 400, 'invalid_input', 'claimant');
      expectError(await json('POST', '/v1/pools/claims/claims', { claimant: 42 }), 400, 'invalid_input', 'claimant');
      expectError(
        await json('POST', '/v1/pools/claims/claims', { claimant: 'x', extra: 1 }),
        400,
        'invalid_input',
        'extra',
      );
      expectError(await json('POST', '/v1/pools/nope/claims', { claimant: 'x' }), 404, 'not_found');
    });

    it('claims several codes with count, and shows holdings and single codes', async () => {
      await makePool('many', ['M1', 'M2', 'M3', 'M4'], { perClaimantLimit: 3 });
      const res = await json('POST', '/v1/pools/many/claims', { claimant: 'alice', count: 2 });
      assert.equal(res.statusCode, 201);
      assert.equal(res.json().codes.length, 2);
      expectError(
        await json('POST', '/v1/pools/many/claims', { claimant: 'alice', count: 0 }),
        400,
        'invalid_input',
        'count',
      );
      const holdings = await json('GET', '/v1/pools/many/claimants/alice');
      assert.equal(holdings.json().codes.length, 2);
      const code = res.json().codes[0] as string;
      assert.equal((await json('GET', `/v1/pools/many/codes/${code}`)).json().claimant, 'alice');
      expectError(await json('GET', '/v1/pools/many/codes/NOPE'), 404, 'not_found');
    });

    it('releases, redeems and revokes codes', async () => {
      await makePool('moves', ['R1', 'R2', 'R3']);
      const { code } = (await json('POST', '/v1/pools/moves/claims', { claimant: 'alice' })).json() as { code: string };
      expectError(
        await json('POST', `/v1/pools/moves/codes/${code}/release`, { claimant: 'bob' }),
        409,
        'conflict',
        'claimant',
      );
      assert.equal(
        (await json('POST', `/v1/pools/moves/codes/${code}/redeem`, { claimant: 'alice' })).json().status,
        'redeemed',
      );
      expectError(await json('POST', `/v1/pools/moves/codes/${code}/redeem`, {}), 409, 'already_redeemed');
      const other = (await json('POST', '/v1/pools/moves/claims', { claimant: 'bob' })).json() as { code: string };
      assert.equal(
        (await inject({ method: 'POST', url: `/v1/pools/moves/codes/${other.code}/release` })).json().status,
        'free',
      );
      assert.equal(
        (await inject({ method: 'POST', url: `/v1/pools/moves/codes/${other.code}/revoke` })).json().status,
        'revoked',
      );
      const stats = (await json('GET', '/v1/pools/moves')).json().stats;
      assert.deepEqual(stats, { total: 3, free: 1, claimed: 0, redeemed: 1, revoked: 1 });
    });

    it('audits, exports CSV (formula cells escaped) and lists events', async () => {
      await makePool('report', ['=SUM(A1)', 'SAFE'], { lowStockThreshold: 1 });
      await json('POST', '/v1/pools/report/claims', { claimant: '+attacker' });
      assert.deepEqual((await json('GET', '/v1/pools/report/audit')).json(), { violations: [] });
      const csv = await json('GET', '/v1/pools/report/export');
      assert.equal(csv.statusCode, 200);
      assert.match(String(csv.headers['content-type']), /^text\/csv/);
      assert.match(String(csv.headers['content-disposition']), /attachment; filename="report.csv"/);
      const lines = csv.body.trim().split('\n');
      assert.equal(lines[0], 'code,status,claimant,claimed_at,redeemed_at,starts_at,expires_at');
      assert.ok(csv.body.includes("'=SUM(A1)"));
      assert.ok(csv.body.includes("'+attacker"));
      const claimed = await json('GET', '/v1/pools/report/export?status=claimed');
      assert.equal(claimed.body.trim().split('\n').length, 2);
      expectError(await json('GET', '/v1/pools/report/export?status=lost'), 400, 'invalid_input', 'status');
      expectError(await json('GET', '/v1/pools/nope/export'), 404, 'not_found');
      const events = (await json('GET', '/v1/events?pool=report')).json().data as { type: string }[];
      assert.deepEqual(
        events.map((e) => e.type),
        ['pool.low_stock'],
      );
    });
  });

  describe('sales', () => {
    const window = () => ({
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
    });

    it('creates a sale, buys, reserves, confirms and audits', async () => {
      const created = await json('POST', '/v1/sales', {
        id: 'tv-sale',
        sku: 'TV',
        cap: 3,
        perCustomerLimit: 2,
        ...window(),
      });
      assert.equal(created.statusCode, 201);
      assert.equal(created.json().status, 'live');
      const buy = await json(
        'POST',
        '/v1/sales/tv-sale/claims',
        { customer: 'alice', quantity: 2 },
        { 'idempotency-key': 'o-1' },
      );
      assert.equal(buy.statusCode, 201);
      const replay = await json(
        'POST',
        '/v1/sales/tv-sale/claims',
        { customer: 'alice', quantity: 2 },
        { 'idempotency-key': 'o-1' },
      );
      assert.equal(replay.headers['idempotent-replayed'], 'true');
      assert.equal(replay.json().order.id, buy.json().order.id);
      expectError(await json('POST', '/v1/sales/tv-sale/claims', { customer: 'alice' }), 409, 'limit_reached');
      expectError(
        await json('POST', '/v1/sales/tv-sale/reservations', { customer: 'bob', quantity: 2, ttlMs: 60000 }),
        409,
        'sold_out',
      );
      const hold = await json('POST', '/v1/sales/tv-sale/reservations', { customer: 'bob', quantity: 1, ttlMs: 60000 });
      assert.equal(hold.statusCode, 201);
      const holdId = hold.json().hold.id as string;
      assert.equal((await json('GET', `/v1/reservations/${holdId}`)).json().status, 'active');
      assert.equal((await json('POST', `/v1/reservations/${holdId}/confirm`)).statusCode, 201);
      assert.equal((await json('POST', `/v1/reservations/${holdId}/confirm`)).statusCode, 200);
      expectError(await json('POST', `/v1/reservations/${holdId}/cancel`), 409, 'conflict');
      const sale = (await json('GET', '/v1/sales/tv-sale')).json();
      assert.equal(sale.status, 'sold_out');
      assert.deepEqual(sale.stats, { sold: 3, held: 0, available: 0 });
      assert.deepEqual((await json('GET', '/v1/sales/tv-sale/audit')).json(), { violations: [] });
      assert.equal((await json('GET', '/v1/sales?sku=TV')).json().data.length, 1);
    });

    it('refuses bad sale definitions field by field', async () => {
      expectError(
        await json('POST', '/v1/sales', {
          sku: 'X',
          startsAt: new Date(Date.now() + 7_200_000).toISOString(),
          endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        }),
        400,
        'invalid_input',
        'endsAt',
      );
      expectError(
        await json('POST', '/v1/sales', { sku: 'X', ...window(), cap: 1, perCustomerLimit: 5 }),
        400,
        'invalid_input',
        'perCustomerLimit',
      );
      expectError(
        await json('POST', '/v1/sales/nope/reservations', { customer: 'a', quantity: 1 }),
        400,
        'invalid_input',
        'ttlMs',
      );
      expectError(await json('POST', '/v1/sales/nope/claims', { customer: 'a' }), 404, 'not_found');
      expectError(await json('POST', '/v1/reservations/not-a-hold/confirm'), 400, 'invalid_input', 'hold');
    });

    it('keeps a wishlist per SKU', async () => {
      assert.equal(
        (await json('POST', '/v1/wishlist', { sku: 'LAMP', customer: 'ann', email: 'ann@example.com' })).statusCode,
        201,
      );
      expectError(
        await json('POST', '/v1/wishlist', { sku: 'LAMP', customer: 'ben' }),
        400,
        'invalid_input',
        'channels',
      );
      expectError(
        await json('POST', '/v1/wishlist', { sku: 'LAMP', customer: 'ben', email: 'not-an-email' }),
        400,
        'invalid_input',
        'channels.email',
      );
      assert.deepEqual(
        (await json('GET', '/v1/wishlist/LAMP')).json().data.map((w: { customer: string }) => w.customer),
        ['ann'],
      );
      assert.equal((await json('DELETE', '/v1/wishlist/LAMP/ann')).statusCode, 204);
      expectError(await json('DELETE', '/v1/wishlist/LAMP/ann'), 404, 'not_found');
    });
  });

  describe('locks and counters', () => {
    it('an Idempotency-Key with a fractional waitMs in the body gets a 4xx, not a 500 (its TTL is whole ms)', async () => {
      // the idempotency hook reads waitMs before the route's schema judges the body (found by the fuzzer)
      const acquire = await json(
        'POST',
        '/v1/locks/frac/acquire',
        { ttlMs: 5000, waitMs: 0.000122 },
        {
          'idempotency-key': 'frac-1',
        },
      );
      assert.ok(acquire.statusCode < 500, acquire.body);
      const other = await json(
        'POST',
        '/v1/pools/none/claims',
        { claimant: 'a', waitMs: 1.5 },
        { 'idempotency-key': 'frac-2' },
      );
      assert.ok(other.statusCode < 500, other.body);
    });

    it('acquires, renews and releases a lease; only the owner token counts; fences grow', async () => {
      const first = await json('POST', '/v1/locks/report-job/acquire', { ttlMs: 5000 });
      assert.equal(first.statusCode, 201, first.body);
      const lease = first.json() as { token: string; fence: number; validForMs: number };
      assert.ok(lease.validForMs > 0);
      expectError(await json('POST', '/v1/locks/report-job/acquire', { ttlMs: 5000, waitMs: 0 }), 409, 'lock_timeout');
      expectError(
        await json('POST', '/v1/locks/report-job/acquire', { ttlMs: 5000, waitMs: 200, fair: true }),
        409,
        'lock_timeout',
      );
      expectError(await json('POST', '/v1/locks/report-job/acquire', { fair: 'yes' }), 400, 'invalid_input');
      const inspect = (await json('GET', '/v1/locks/report-job')).json() as { holders: { tokenPrefix: string }[] };
      assert.equal(inspect.holders.length, 1);
      assert.ok(!JSON.stringify(inspect).includes(lease.token), 'inspect never shows a usable token');
      assert.equal(
        (await json('POST', '/v1/locks/report-job/renew', { token: lease.token, ttlMs: 5000 })).statusCode,
        200,
      );
      expectError(
        await json('POST', '/v1/locks/report-job/release', { token: 'not-the-owner-token' }),
        409,
        'not_owner',
      );
      expectError(await json('POST', '/v1/locks/report-job/release', {}), 400, 'invalid_input', 'token');
      assert.equal((await json('POST', '/v1/locks/report-job/release', { token: lease.token })).statusCode, 204);
      const next = (await json('POST', '/v1/locks/report-job/acquire', { fair: true })).json() as { fence: number };
      assert.ok(next.fence > lease.fence, 'fences only grow');
      expectError(await json('POST', '/v1/locks/report-job/acquire', { ttlMs: 'soon' }), 400, 'invalid_input');
    });

    it('counts exactly with sharded counters', async () => {
      await json('POST', '/v1/counters/visits', { by: 5 });
      await json('POST', '/v1/counters/visits', {});
      await json('POST', '/v1/counters/visits', { by: -2 });
      assert.equal((await json('GET', '/v1/counters/visits')).json().value, 4);
      assert.equal((await json('DELETE', '/v1/counters/visits')).statusCode, 204);
      assert.equal((await json('GET', '/v1/counters/visits')).json().value, 0);
      expectError(await json('POST', '/v1/counters/visits', { by: 1.5 }), 400, 'invalid_input');
    });
  });

  describe('operations', () => {
    it('serves health, readiness, the status page and request ids', async () => {
      assert.deepEqual((await json('GET', '/healthz')).json(), { ok: true });
      const ready = await json('GET', '/readyz');
      assert.equal(ready.statusCode, 200);
      assert.equal(ready.json().backend, 'sqlite');
      const page = await json('GET', '/');
      assert.match(String(page.headers['content-type']), /^text\/html/);
      assert.match(page.body, /<title>dibs<\/title>/);
      const traced = await inject({ method: 'GET', url: '/healthz', headers: { 'x-request-id': 'trace-123' } });
      assert.equal(traced.headers['x-request-id'], 'trace-123');
      assert.match(String((await json('GET', '/healthz')).headers['x-request-id']), /^[0-9a-f-]{36}$/);
    });
  });
});
