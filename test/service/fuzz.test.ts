/**
 * Property/fuzz test: 10,000+ generated and malformed requests across every declared route (and
 * some undeclared ones) through Fastify's inject, against a real SQLite store with real objects in
 * it. Invariant: never a 5xx, and every 4xx carries the error shape `{ error: { code, message, field? } }`.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import fc from 'fast-check';
import type { LightMyRequestResponse } from 'fastify';
import { assertKeepsContract, openTestService, type TestService } from '../support/service.js';

const RUNS = Number(process.env.DIBS_FUZZ_RUNS ?? 10_000);

const FIELDS = [
  'name',
  'perClaimantLimit',
  'lowStockThreshold',
  'metadata',
  'codes',
  'claimant',
  'count',
  'idempotencyKey',
  'id',
  'sku',
  'startsAt',
  'endsAt',
  'cap',
  'perCustomerLimit',
  'customer',
  'quantity',
  'ttlMs',
  'waitMs',
  'limit',
  'token',
  'by',
  'email',
  'webhook',
  'webPush',
  'scopes',
];
const SEGMENTS = [
  'p',
  'q',
  's',
  'demo',
  'C1',
  'C2',
  'alice',
  'lock',
  'ctr',
  'SKU',
  'hold_0123abcd',
  'sale_x',
  '0123456789abcdef',
  '..',
  '.',
  '%',
  '%ZZ',
  '%00',
  'a~b',
  'acme~p',
  '~',
  '%20',
  'x'.repeat(300),
];

describe('fuzz: generated and malformed requests', () => {
  let svc: TestService;
  let keys: (string | null)[];
  before(async () => {
    svc = await openTestService();
    const admin = await svc.key('default', ['admin']);
    const tenant = await svc.key('acme', ['admin']);
    keys = [
      admin,
      admin,
      tenant,
      tenant,
      await svc.key('acme', ['pools:read']),
      null,
      'Bearer garbage',
      'Basic Zm9vOmJhcg==',
    ];
    for (const key of [admin, tenant]) {
      await svc.call(key, 'POST', '/v1/pools', { name: 'p', perClaimantLimit: 2, lowStockThreshold: 5 });
      await svc.call(key, 'POST', '/v1/pools/p/codes', { codes: Array.from({ length: 200 }, (_, i) => `C${i}`) });
      await svc.call(key, 'POST', '/v1/sales', {
        id: 's',
        sku: 'SKU',
        startsAt: new Date(Date.now() + 200).toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap: 100,
        perCustomerLimit: 3,
      });
    }
    await new Promise((resolve) => setTimeout(resolve, 300));
  });
  after(() => svc.close());

  it(`answers ${RUNS} generated requests without a 5xx, every 4xx in the error shape`, async () => {
    const templates = [
      ...svc.app.routeDocs.map((r) => ({ method: r.method as string, url: r.url })),
      { method: 'GET', url: '/v1/nothing/:x' },
      { method: 'PUT', url: '/v1/pools/:pool' },
      { method: 'POST', url: '/v1/pools/:pool/codes/:code' },
    ];
    const segment = fc.oneof(
      { weight: 4, arbitrary: fc.constantFrom(...SEGMENTS) },
      { weight: 2, arbitrary: fc.string({ maxLength: 40 }).map(encodeURIComponent) },
      { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 20 }).map(encodeURIComponent) },
    );
    const value = fc.oneof(
      fc.jsonValue({ maxDepth: 2 }),
      fc.integer({ min: -10, max: 5000 }),
      fc.constantFrom('alice', 'C1', 'p', '', ' ', 'x'.repeat(500), '2026-01-01T00:00:00Z', null, true, [], {}),
    );
    const body = fc.oneof(
      {
        weight: 5,
        arbitrary: fc
          .dictionary(fc.constantFrom(...FIELDS), value, { maxKeys: 4 })
          .map((b) => ({ kind: 'json' as const, value: b })),
      },
      { weight: 2, arbitrary: fc.jsonValue({ maxDepth: 3 }).map((v) => ({ kind: 'json' as const, value: v })) },
      {
        weight: 2,
        arbitrary: fc
          .string({ maxLength: 60 })
          .map((s) => ({ kind: 'raw' as const, value: s, type: 'application/json' })),
      },
      {
        weight: 1,
        arbitrary: fc.string({ maxLength: 60 }).map((s) => ({ kind: 'raw' as const, value: s, type: 'text/csv' })),
      },
      {
        weight: 1,
        arbitrary: fc
          .constantFrom('application/xml', 'multipart/form-data', 'text/plain', '')
          .chain((type) => fc.string({ maxLength: 30 }).map((s) => ({ kind: 'raw' as const, value: s, type }))),
      },
      { weight: 2, arbitrary: fc.constant({ kind: 'none' as const }) },
    );
    const query = fc.dictionary(
      fc.constantFrom('limit', 'after', 'status', 'sku', 'pool', 'x'),
      fc.oneof(
        fc.constantFrom('1', '0', '-1', '1000', '1001', 'abc', 'claimed', 'free', 'p', ''),
        fc.string({ maxLength: 20 }),
      ),
      { maxKeys: 3 },
    );
    const request = fc.record({
      template: fc.constantFrom(...templates),
      segments: fc.array(segment, { minLength: 3, maxLength: 3 }),
      body,
      query,
      auth: fc.nat({ max: keys.length - 1 }),
      idempotencyKey: fc.option(fc.oneof(fc.constantFrom('k1', 'k2', ''), fc.string({ maxLength: 300 })), { freq: 3 }),
    });

    let sent = 0;
    const statuses = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(request, async (r) => {
        let i = 0;
        const path = r.template.url.replace(/:(\w+)/g, () => r.segments[i++]!);
        const qs = new URLSearchParams(r.query).toString();
        const headers: Record<string, string> = {};
        const auth = keys[r.auth];
        if (auth) headers.authorization = auth;
        if (r.idempotencyKey !== null) headers['idempotency-key'] = r.idempotencyKey;
        let payload: string | undefined;
        if (r.body.kind === 'json') {
          const b = r.body.value as Record<string, unknown> | null;
          // A fuzzer must not park requests waiting for locks for long.
          if (b && typeof b === 'object' && typeof b.waitMs === 'number' && b.waitMs > 50) b.waitMs = 50;
          payload = JSON.stringify(b);
          headers['content-type'] = 'application/json';
        } else if (r.body.kind === 'raw') {
          payload = r.body.value;
          if (r.body.type) headers['content-type'] = r.body.type;
        }
        const url = qs ? `${path}?${qs}` : path;
        const res: LightMyRequestResponse = await svc.app.inject({
          method: r.template.method as 'GET',
          url,
          headers,
          ...(payload === undefined ? {} : { payload }),
        });
        sent++;
        assertKeepsContract(svc.contract, r.template.method, url, res);
        statuses.set(res.statusCode, (statuses.get(res.statusCode) ?? 0) + 1);
        const what = `${r.template.method} ${path}?${qs} ${payload ?? ''} → ${res.statusCode} ${res.body.slice(0, 300)}`;
        assert.ok(res.statusCode < 500, what);
        if (res.statusCode >= 400) {
          let parsed: { error?: { code?: unknown; message?: unknown; field?: unknown } };
          try {
            parsed = res.json();
          } catch {
            assert.fail(`not JSON: ${what}`);
          }
          assert.equal(typeof parsed.error?.code, 'string', what);
          assert.equal(typeof parsed.error?.message, 'string', what);
          assert.ok(parsed.error?.field === undefined || typeof parsed.error.field === 'string', what);
        }
      }),
      { numRuns: RUNS },
    );
    assert.ok(sent >= RUNS, `sent ${sent}`);
    // The generator reached the handlers, not only the 4xx guards.
    assert.ok(
      [...statuses.keys()].some((s) => s < 300),
      JSON.stringify([...statuses]),
    );
    assert.ok(
      (statuses.get(401) ?? 0) > 0 && (statuses.get(400) ?? 0) > 0 && (statuses.get(404) ?? 0) > 0,
      JSON.stringify([...statuses]),
    );
  });
});
