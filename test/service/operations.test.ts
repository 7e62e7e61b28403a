/**
 * Idempotency keys (Stripe semantics, across instances), per-key rate limits, Prometheus metrics
 * (parsed by a Prometheus text parser), the OpenAPI document and config validation.
 */
import { Validator } from '@seriousme/openapi-schema-validator';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect, type AddressInfo, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import Database from 'better-sqlite3';
import parsePrometheusTextFormat from 'parse-prometheus-text-format';
import { openDibs } from '../../src/index.js';
import { buildServer } from '../../src/service/app.js';
import { workerCount } from '../../src/service/cluster.js';
import { loadServiceConfig } from '../../src/service/config.js';
import { errorOf, openTestService, type TestService } from '../support/service.js';

describe('Idempotency-Key', () => {
  let svc: TestService;
  let admin: string;
  before(async () => {
    svc = await openTestService();
    admin = await svc.key('acme', ['admin']);
    await svc.call(admin, 'POST', '/v1/pools', { name: 'idem', perClaimantLimit: 5 });
    await svc.call(admin, 'POST', '/v1/pools/idem/codes', { codes: Array.from({ length: 50 }, (_, i) => `I${i}`) });
  });
  after(() => svc.close());

  it('same key + same body → the stored answer, replayed; different body → 409 idempotency_key_reused', async () => {
    const first = await svc.call(
      admin,
      'POST',
      '/v1/pools/idem/claims',
      { claimant: 'ann' },
      { 'idempotency-key': 'k-1' },
    );
    assert.equal(first.statusCode, 201);
    assert.equal(first.headers['idempotent-replayed'], undefined);
    // Same body with keys in another order is the same request.
    const again = await svc.call(
      admin,
      'POST',
      '/v1/pools/idem/claims',
      { claimant: 'ann' },
      { 'idempotency-key': 'k-1' },
    );
    assert.equal(again.statusCode, 201);
    assert.equal(again.headers['idempotent-replayed'], 'true');
    assert.equal(again.body, first.body);
    errorOf(
      await svc.call(admin, 'POST', '/v1/pools/idem/claims', { claimant: 'bob' }, { 'idempotency-key': 'k-1' }),
      409,
      'idempotency_key_reused',
    );
    errorOf(
      await svc.call(admin, 'POST', '/v1/pools/other/claims', { claimant: 'ann' }, { 'idempotency-key': 'k-1' }),
      409,
      'idempotency_key_reused',
    );
    // Without a key, a second claim takes a second code (limit 5).
    const unkeyed = await svc.call(admin, 'POST', '/v1/pools/idem/claims', { claimant: 'ann' });
    assert.notEqual(unkeyed.json().code, first.json().code);
  });

  it('works on every kind of mutating route, stores 4xx answers, not 5xx; keys are per API key', async () => {
    const created = await svc.call(admin, 'POST', '/v1/pools', { name: 'idem2' }, { 'idempotency-key': 'create-1' });
    assert.equal(created.statusCode, 201);
    const replay = await svc.call(admin, 'POST', '/v1/pools', { name: 'idem2' }, { 'idempotency-key': 'create-1' });
    assert.equal(replay.statusCode, 201, 'replayed, not 409 already_exists');
    assert.equal(replay.headers['idempotent-replayed'], 'true');
    const del = await svc.call(admin, 'DELETE', '/v1/pools/idem2', undefined, { 'idempotency-key': 'del-1' });
    assert.equal(del.statusCode, 204);
    const delAgain = await svc.call(admin, 'DELETE', '/v1/pools/idem2', undefined, { 'idempotency-key': 'del-1' });
    assert.equal(delAgain.statusCode, 204, 'the stored 204, not 404');
    const counter = await svc.call(admin, 'POST', '/v1/counters/c', { by: 3 }, { 'idempotency-key': 'incr-1' });
    const counterAgain = await svc.call(admin, 'POST', '/v1/counters/c', { by: 3 }, { 'idempotency-key': 'incr-1' });
    assert.equal(counterAgain.json().value, counter.json().value, 'incremented once');
    // A 4xx answer is stored too (Stripe): the same request gets the same error.
    const bad = await svc.call(
      admin,
      'POST',
      '/v1/pools/nope/claims',
      { claimant: 'x' },
      { 'idempotency-key': 'bad-1' },
    );
    errorOf(bad, 404, 'not_found');
    assert.equal(
      (await svc.call(admin, 'POST', '/v1/pools/nope/claims', { claimant: 'x' }, { 'idempotency-key': 'bad-1' }))
        .headers['idempotent-replayed'],
      'true',
    );
    // Another API key (even of the same tenant) has its own key space.
    const other = await svc.key('acme', ['admin']);
    assert.equal(
      (await svc.call(other, 'POST', '/v1/counters/c', { by: 3 }, { 'idempotency-key': 'incr-1' })).json().value,
      counter.json().value + 3,
    );
    // Malformed keys are refused.
    errorOf(
      await svc.call(admin, 'POST', '/v1/counters/c', { by: 1 }, { 'idempotency-key': 'x'.repeat(300) }),
      400,
      'invalid_input',
    );
  });

  it('a request whose key is still in flight → 409 idempotency_key_in_use', async () => {
    const me = (await svc.call(admin, 'GET', '/v1/me')).json() as { keyId: string };
    // Another instance has begun this key and not answered yet.
    await svc.dibs.backend.service.beginIdempotent(me.keyId, 'busy-1', 'whatever', 60_000);
    const res = await svc.call(
      admin,
      'POST',
      '/v1/pools/idem/claims',
      { claimant: 'cat' },
      { 'idempotency-key': 'busy-1' },
    );
    errorOf(res, 409, 'idempotency_key_in_use');
    assert.equal(res.headers['retry-after'], '1');
    // Concurrent duplicates: exactly one runs, the others are in-use conflicts or replays of it.
    const answers = await Promise.all(
      Array.from({ length: 10 }, () =>
        svc.call(admin, 'POST', '/v1/pools/idem/claims', { claimant: 'dan' }, { 'idempotency-key': 'race-1' }),
      ),
    );
    const ran = answers.filter((a) => a.statusCode === 201 && a.headers['idempotent-replayed'] === undefined);
    assert.equal(ran.length, 1, answers.map((a) => `${a.statusCode} ${a.body}`).join('\n'));
    for (const a of answers)
      if (a !== ran[0])
        assert.ok(a.statusCode === 409 ? errorOf(a).code === 'idempotency_key_in_use' : a.body === ran[0]!.body);
    assert.equal((await svc.call(admin, 'GET', '/v1/pools/idem/claimants/dan')).json().codes.length, 1);
  });

  it('is shared by every instance on the store: a retry on another instance replays', async () => {
    const dibs2 = await openDibs(svc.store);
    const app2 = buildServer({ dibs: dibs2, rateLimit: false });
    try {
      const first = await svc.call(
        admin,
        'POST',
        '/v1/pools/idem/claims',
        { claimant: 'eve' },
        { 'idempotency-key': 'multi-1' },
      );
      const second = await app2.inject({
        method: 'POST',
        url: '/v1/pools/idem/claims',
        headers: { authorization: admin, 'content-type': 'application/json', 'idempotency-key': 'multi-1' },
        payload: JSON.stringify({ claimant: 'eve' }),
      });
      assert.equal(second.headers['idempotent-replayed'], 'true');
      assert.equal(second.body, first.body);
    } finally {
      await app2.close();
      await dibs2.close();
    }
  });
});

describe('rate limits', () => {
  it('limits each API key separately: 429 rate_limited with Retry-After', async () => {
    const svc = await openTestService({ rateLimit: { max: 5, timeWindowMs: 60_000 } });
    try {
      const a = await svc.key('acme', ['pools:read']);
      const b = await svc.key('acme', ['pools:read']);
      for (let i = 0; i < 5; i++) assert.equal((await svc.call(a, 'GET', '/v1/pools')).statusCode, 200);
      const limited = await svc.call(a, 'GET', '/v1/pools');
      errorOf(limited, 429, 'rate_limited');
      assert.ok(Number(limited.headers['retry-after']) > 0, JSON.stringify(limited.headers));
      assert.equal(limited.headers['x-ratelimit-limit'], '5');
      assert.equal((await svc.call(b, 'GET', '/v1/pools')).statusCode, 200, 'another key has its own budget');
      // Health checks and docs are never limited.
      for (let i = 0; i < 10; i++) assert.equal((await svc.call(null, 'GET', '/healthz')).statusCode, 200);
    } finally {
      await svc.close();
    }
  });
});

describe('metrics, OpenAPI, config', () => {
  let svc: TestService;
  let admin: string;
  before(async () => {
    svc = await openTestService();
    admin = await svc.key('default', ['admin']);
  });
  after(() => svc.close());

  it('exposes claims by outcome, latency histograms, free units per pool, lock waiters and outbox lag in the Prometheus format', async () => {
    await svc.call(admin, 'POST', '/v1/pools', { name: 'm', perClaimantLimit: 1 });
    await svc.call(admin, 'POST', '/v1/pools/m/codes', { codes: ['A', 'B', 'C'] });
    await svc.call(admin, 'POST', '/v1/pools/m/claims', { claimant: 'x' });
    await svc.call(admin, 'POST', '/v1/pools/m/claims', { claimant: 'x' });
    await svc.call(admin, 'POST', '/v1/pools/m/claims', { claimant: 'y' });
    await svc.call(admin, 'POST', '/v1/pools/m/claims', { claimant: 'z' });
    await svc.call(admin, 'POST', '/v1/pools/m/claims', { claimant: 'w' }); // sold out
    errorOf(await svc.call(null, 'GET', '/metrics'), 401, 'unauthorized');
    errorOf(await svc.call(await svc.key('default', ['pools:read']), 'GET', '/metrics'), 403, 'forbidden');
    const res = await svc.call(await svc.key('default', ['metrics:read']), 'GET', '/metrics');
    assert.equal(res.statusCode, 200);
    assert.match(String(res.headers['content-type']), /^text\/plain; version=0\.0\.4/);
    const families = new Map(parsePrometheusTextFormat(res.body).map((f) => [f.name, f]));
    const claims = families.get('dibs_claims_total')!;
    assert.equal(claims.type, 'COUNTER');
    const outcome = (o: string) =>
      Number(claims.metrics.find((m) => m.labels?.kind === 'pool' && m.labels.outcome === o)?.value);
    assert.equal(outcome('claimed'), 3);
    assert.equal(outcome('already-held'), 1);
    assert.equal(outcome('sold_out'), 1);
    const latency = families.get('dibs_claim_duration_seconds')!;
    assert.equal(latency.type, 'HISTOGRAM');
    assert.equal(Number(latency.metrics[0]!.buckets!['+Inf']), 5);
    assert.equal(families.get('dibs_http_request_duration_seconds')!.type, 'HISTOGRAM');
    // (This parser folds histogram samples by bucket and drops their other labels: check those in the text.)
    assert.match(
      res.body,
      /^dibs_http_request_duration_seconds_count\{[^}]*route="\/v1\/pools\/:pool\/claims"[^}]*\} \d+$/m,
    );
    assert.equal(
      Number(
        families
          .get('dibs_pool_free_units')!
          .metrics.find((m) => m.labels?.pool === 'm' && m.labels.tenant === 'default')!.value,
      ),
      0,
    );
    assert.equal(Number(families.get('dibs_lock_waiters')!.metrics[0]!.value), 0);
    assert.equal(families.get('dibs_outbox_lag_seconds')!.type, 'GAUGE');
    assert.ok(families.has('dibs_process_resident_memory_bytes'));
  });

  it('serves an OpenAPI 3.1 document covering every route, with the error shape and a local reference page', async () => {
    const res = await svc.call(null, 'GET', '/openapi.json');
    const doc = res.json() as {
      openapi: string;
      paths: Record<string, Record<string, { responses: Record<string, unknown>; parameters?: { name: string }[] }>>;
      components: { schemas: Record<string, unknown> };
    };
    assert.equal(doc.openapi, '3.1.0');
    // valid against the OpenAPI 3.1 schema itself, as code generators and API gateways check it
    const validator = new Validator();
    const validity = await validator.validate(structuredClone(doc) as never);
    assert.ok(validity.valid, `invalid OpenAPI document: ${String(JSON.stringify(validity.errors)).slice(0, 2000)}`);
    // The contract check every svc.call runs (test/support/openapi-contract.ts) can fail:
    assert.deepEqual(
      svc.contract.check('GET', '/v1/pools/p', 200, 'application/json', JSON.stringify({ name: 'p' })).length,
      1,
      'a body off its schema',
    );
    assert.match(
      svc.contract.check('GET', '/v1/pools/p', 418, 'application/json', '{}')[0] ?? '',
      /status not documented/,
    );
    assert.match(
      svc.contract.check('GET', '/v1/pools/p', 404, 'application/json', '{"error":{}}')[0] ?? '',
      /does not match/,
      'an error without code and message',
    );
    assert.deepEqual(
      svc.contract.check(
        'GET',
        '/v1/pools/p',
        404,
        'application/json',
        '{"error":{"code":"not_found","message":"no"}}',
      ),
      [],
    );
    for (const r of svc.app.routeDocs) {
      const op = doc.paths[r.url.replace(/:(\w+)/g, '{$1}')]?.[r.method.toLowerCase()];
      assert.ok(op, `${r.method} ${r.url} is documented`);
      if (r.idempotent)
        assert.ok(
          op.parameters?.some((p) => p.name === 'Idempotency-Key'),
          `${r.method} ${r.url} documents Idempotency-Key`,
        );
    }
    for (const name of ['Error', 'Pool', 'ClaimResult', 'Sale', 'Lease', 'PoolPage'])
      assert.ok(doc.components.schemas[name], name);
    assert.ok(!JSON.stringify(doc).includes('#/$defs/'), 'every $ref resolves inside the document');
    const importBody = JSON.stringify(
      (doc.paths['/v1/pools/{pool}/codes']!.post as unknown as { requestBody: unknown }).requestBody,
    );
    for (const field of ['"code"', '"startsAt"', '"expiresAt"'])
      assert.ok(importBody.includes(field), `the import body documents ${field} entries`);
    assert.ok(
      JSON.stringify(doc.components.schemas.ImportResult).includes('firstInvalid'),
      'ImportResult documents firstInvalid',
    );
    const page = await svc.call(null, 'GET', '/docs');
    assert.equal(page.statusCode, 200);
    assert.match(page.body, /openapi\.json/);
    assert.doesNotMatch(page.body, /https?:\/\/(?!json-schema)/, 'no external assets');
  });

  it('is ready only when the store is reachable and its migrations are applied', async () => {
    const ready = await svc.call(null, 'GET', '/readyz');
    assert.equal(ready.statusCode, 200, ready.body);
    const { applied, expected } = ready.json().migrations as { applied: number; expected: number };
    assert.equal(applied, expected);
    // Another process rolled the ledger back (an older build migrated this file): not ready.
    const raw = new Database(svc.store.replace(/^sqlite:/, ''));
    try {
      raw.prepare('DELETE FROM dibs_migrations WHERE id = ?').run(expected);
      const behind = await svc.call(null, 'GET', '/readyz');
      assert.equal(behind.statusCode, 503, behind.body);
      // Numbers may have gaps (branches reserve them), so the newest applied one is just below `expected`.
      assert.ok(behind.json().migrations.applied < expected, behind.body);
      raw.prepare(`INSERT INTO dibs_migrations (id, name, applied_at) VALUES (?, 'restored', 'now')`).run(expected);
    } finally {
      raw.close();
    }
    assert.equal((await svc.call(null, 'GET', '/readyz')).statusCode, 200);
  });

  it('validates config from file, env and flags (flags win)', () => {
    const config = loadServiceConfig({
      env: { PORT: '4000', DIBS_RATE_LIMIT: '10', DIBS_METRICS_PUBLIC: 'true' },
      flags: { port: 5000 },
    });
    assert.equal(config.port, 5000);
    assert.equal(config.rateLimit, 10);
    assert.equal(config.metricsPublic, true);
    assert.equal(config.store, 'sqlite:./dibs.db');
    assert.throws(() => loadServiceConfig({ env: { PORT: 'eighty' } }), {
      code: 'invalid_input',
      field: 'config.port',
    });
    assert.throws(() => loadServiceConfig({ env: {}, flags: { logLevel: 'loud' } }), {
      code: 'invalid_input',
      field: 'config.logLevel',
    });
    assert.equal(loadServiceConfig({ env: {} }).workers, 1, 'one service process by default');
    assert.equal(loadServiceConfig({ env: { DIBS_WORKERS: '3' } }).workers, 3);
    assert.equal(loadServiceConfig({ env: {}, flags: { workers: 'auto' } }).workers, 'auto');
    assert.ok(workerCount('auto') >= 1 && workerCount(2) === 2);
    for (const bad of ['0', 'many', '1.5', '257'])
      assert.throws(
        () => loadServiceConfig({ env: {}, flags: { workers: bad } }),
        { code: 'invalid_input', field: 'config.workers' },
        bad,
      );
    assert.throws(() => loadServiceConfig({ env: { DIBS_CONFIG: '/nonexistent/dibs.json' } }), {
      code: 'invalid_input',
    });
    const dir = mkdtempSync(join(tmpdir(), 'dibs-config-'));
    try {
      const file = join(dir, 'dibs.json');
      writeFileSync(file, JSON.stringify({ port: 7000, host: '0.0.0.0', rateLimit: 50, store: 'sqlite:/tmp/x.db' }));
      const fromFile = loadServiceConfig({ file, env: { PORT: '7100' } });
      assert.deepEqual(
        [fromFile.port, fromFile.host, fromFile.rateLimit, fromFile.store],
        [7100, '0.0.0.0', 50, 'sqlite:/tmp/x.db'],
        'env overrides the file',
      );
      writeFileSync(file, JSON.stringify({ prot: 7000 }));
      assert.throws(
        () => loadServiceConfig({ file, env: {} }),
        { code: 'invalid_input' },
        'unknown settings are refused',
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('shutdown', () => {
  it('a request arriving while the service closes is answered 503 unavailable in the error shape, and is not run', {
    timeout: 60_000,
  }, async () => {
    const svc = await openTestService();
    const sockets: Socket[] = [];
    try {
      const key = await svc.key('default', ['admin']);
      assert.equal((await svc.call(key, 'POST', '/v1/pools', { name: 'closing' })).statusCode, 201);
      await svc.app.listen({ port: 0, host: '127.0.0.1' });
      const { port } = svc.app.server.address() as AddressInfo;
      // An upload still streaming keeps the close waiting, like a request in flight.
      const upload = connect(port, '127.0.0.1');
      sockets.push(upload);
      upload.write(
        `POST /v1/pools/closing/codes HTTP/1.1\r\nhost: x\r\nauthorization: ${key}\r\ncontent-type: text/csv\r\ntransfer-encoding: chunked\r\n\r\n`,
      );
      upload.write('b\r\ncode\nFIRST\n\r\n');
      // A request racing the close: its first bytes before, the rest after closing began.
      const late = connect(port, '127.0.0.1');
      sockets.push(late);
      let answer = '';
      late.on('data', (d) => (answer += d));
      const lateEnded = new Promise((resolve) => late.on('close', resolve));
      const body = JSON.stringify({ name: 'late' });
      late.write(`POST /v1/pools HTTP/1.1\r\nhost: x\r\n`);
      await new Promise((resolve) => setTimeout(resolve, 100));
      const closed = svc.app.close();
      await new Promise((resolve) => setTimeout(resolve, 50));
      late.write(
        `authorization: ${key}\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`,
      );
      // bounded: a server that ran the request would keep the connection open
      await Promise.race([lateEnded, new Promise((resolve) => setTimeout(resolve, 30_000).unref())]);
      assert.match(answer, /^HTTP\/1\.1 503 /, answer);
      assert.match(answer, /\r\nretry-after: 1\r\n/i);
      assert.match(answer, /\r\nconnection: close\r\n/i);
      assert.match(answer, /"code":"unavailable"/);
      assert.match(answer, /shutting down/);
      upload.end('7\r\nSECOND\n\r\n0\r\n\r\n');
      await closed;
      assert.equal(
        (await svc.dibs.pools.list()).items.some((p) => p.name === 'late'),
        false,
        'the late request was not run',
      );
      assert.equal((await svc.dibs.pools.get('closing')).stats.total, 2, 'the upload in flight was finished');
    } finally {
      for (const socket of sockets) socket.destroy();
      await svc.close().catch(() => undefined);
    }
  });
});
