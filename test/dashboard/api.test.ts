/** The dashboard's server side, no browser needed: its files, headers and the /v1 read endpoints it added. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';
import { buildServer } from '../../src/service/app.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { ClaimRateSampler } from '../../src/dashboard/claim-rate.js';
import { openTempSqlite } from '../support/sqlite.js';

describe('dashboard: files and read endpoints', () => {
  let env: Awaited<ReturnType<typeof openTempSqlite>>;
  let app: FastifyInstance;
  let authorization = '';
  /** A GET with the admin key (the read endpoints need one; the page and its files do not). */
  const get = (url: string) => app.inject({ method: 'GET', url, headers: { authorization } });
  before(async () => {
    env = await openTempSqlite();
    app = buildServer({ dibs: env.dibs, rateLimit: false });
    await app.ready();
    authorization = `Bearer ${(await createApiKey(env.dibs.backend.service, { name: 'dashboard api test', scopes: ['admin'] })).key}`;
  });
  after(async () => {
    await app.close();
    await env.cleanup();
  });

  it('serves the page and its files under a same-origin-only CSP, and nothing else from disk', async () => {
    const page = await app.inject({ method: 'GET', url: '/' });
    assert.equal(page.statusCode, 200);
    assert.match(String(page.headers['content-type']), /^text\/html/);
    assert.match(String(page.headers['content-security-policy']), /default-src 'none'.*connect-src 'self'/);
    assert.match(page.body, /<title>dibs<\/title>/);
    // Every file the page references is served; no reference leaves the origin.
    const refs = [...page.body.matchAll(/(?:src|href)="([^"]+)"/g)]
      .map((m) => m[1]!)
      .filter((r) => !r.startsWith('#') && !r.startsWith('data:'));
    assert.ok(refs.length >= 2);
    for (const ref of refs) {
      assert.match(ref, /^\/dashboard\//);
      const file = await app.inject({ method: 'GET', url: ref });
      assert.equal(file.statusCode, 200, ref);
      assert.equal(file.headers['x-content-type-options'], 'nosniff');
    }
    const script = await app.inject({ method: 'GET', url: '/dashboard/dashboard.js' });
    assert.match(String(script.headers['content-type']), /^text\/javascript/);
    for (const imported of script.body.matchAll(/from '\.\/([\w.-]+)'/g))
      assert.equal((await app.inject({ method: 'GET', url: `/dashboard/${imported[1]}` })).statusCode, 200);
    for (const bad of [
      '/dashboard/index.html',
      '/dashboard/..%2Fapp.js',
      '/dashboard/%2e%2e%2f%2e%2e%2fpackage.json',
      '/dashboard/nope.js',
    ]) {
      const res = await app.inject({ method: 'GET', url: bad });
      assert.equal(res.statusCode, 404, bad);
      assert.equal(res.json().error.code, 'not_found');
    }
  });

  it('GET /v1/pools/:pool/claim-rate: a series ending with a point read now', async () => {
    await env.dibs.pools.create({ name: 'rate' });
    await env.dibs.pools.importCodes('rate', ['A', 'B', 'C', 'D']);
    const first = await get('/v1/pools/rate/claim-rate');
    assert.equal(first.statusCode, 200);
    assert.equal(first.json().pool, 'rate');
    assert.equal(first.json().everyMs, 5000);
    assert.deepEqual(
      first.json().points.map((p: { handedOut: number; perMinute: number }) => [p.handedOut, p.perMinute]),
      [[0, 0]],
    );
    await env.dibs.pools.claim('rate', 'a');
    await env.dibs.pools.claim('rate', 'b');
    await sleep(5); // the live point needs a later timestamp than the first sample
    const next = (await get('/v1/pools/rate/claim-rate')).json();
    const last = next.points[next.points.length - 1];
    assert.equal(last.handedOut, 2);
    assert.ok(last.perMinute > 0);
    const missing = await get('/v1/pools/nope/claim-rate');
    assert.equal(missing.statusCode, 404);
    assert.equal(missing.json().error.code, 'not_found');
    assert.equal((await get('/v1/pools/bad%20name!/claim-rate')).statusCode, 400);
  });

  it('GET /v1/outbox and /v1/events/:id/deliveries: outbox status and each attempt', async () => {
    await env.dibs.pools.create({ name: 'low', lowStockThreshold: 1 });
    await env.dibs.pools.importCodes('low', ['X', 'Y']);
    await env.dibs.pools.claim('low', 'someone');
    const status = (await get('/v1/outbox')).json();
    assert.equal(status.pending, 1);
    const outbox = env.dibs.backend.outbox;
    const [due] = await outbox.claimDue(10, 60_000);
    assert.ok(due);
    await outbox.markFailed(due.id, 'HTTP 500 from receiver', 1000);
    const deliveries = await get(`/v1/events/${due.id}/deliveries`);
    assert.equal(deliveries.statusCode, 200);
    assert.deepEqual(
      deliveries.json().data.map((d: { attempt: number; ok: boolean; detail: string }) => [d.attempt, d.ok, d.detail]),
      [[1, false, 'HTTP 500 from receiver']],
    );
    assert.equal((await get('/v1/events/not-an-id/deliveries')).statusCode, 400);
  });
});

describe('ClaimRateSampler', () => {
  let env: Awaited<ReturnType<typeof openTempSqlite>>;
  before(async () => {
    env = await openTempSqlite();
  });
  after(async () => env.cleanup());

  it('samples watched pools on its own, computes a net per-minute rate, and forgets deleted pools', async () => {
    const sampler = new ClaimRateSampler(env.dibs, { everyMs: 20, keep: 5 });
    await env.dibs.pools.create({ name: 's' });
    await env.dibs.pools.importCodes(
      's',
      Array.from({ length: 50 }, (_, i) => `S${i}`),
    );
    await sampler.series('s');
    for (let i = 0; i < 10; i++) await env.dibs.pools.claim('s', `c${i}`);
    // Wait (bounded, generously) for ticks to record the claims; no timing is asserted.
    let series = await sampler.series('s');
    for (let waited = 0; waited < 20_000 && series.points.filter((p) => p.handedOut === 10).length < 3; waited += 50) {
      await sleep(50);
      series = await sampler.series('s');
    }
    assert.ok(series.points.length <= 6, 'keeps at most `keep` samples plus the live point');
    assert.equal(series.points[series.points.length - 1]!.handedOut, 10);
    assert.ok(series.points.every((p) => p.perMinute >= 0));
    const code = (await env.dibs.pools.holdings('s', 'c0'))[0]!.code;
    await env.dibs.pools.release('s', code);
    series = await sampler.series('s');
    assert.equal(series.points[series.points.length - 1]!.perMinute, 0, 'a release never shows as a negative rate');
    await env.dibs.pools.delete('s');
    await assert.rejects(sampler.series('s'), (error: { code?: string }) => error.code === 'not_found');
    await sampler.stop();
  });
});
