/**
 * Tracing through the HTTP service, with an in-process exporter: a claim, a buy and a lock each
 * make a server span (child of the caller's `traceparent`), a facade span under it and store
 * steps under that, with store, operation, outcome and retries; the background jobs make none;
 * a webhook delivery and its stream entry carry their own span's context in `traceparent`. One SQLite service.
 * And `dibs.retries` on a store step counts the adapter running the step again: on PostgreSQL a
 * claim from a process that has not yet learned that its pool has a low-stock threshold takes the
 * fast statement, is told it needs the settling transaction, and runs again — one retry, every time.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base';
import { openDibs } from '../../src/index.js';
import { startServer, type RunningServer } from '../../src/service/server.js';
import { httpReceiver } from '../support/receivers.js';
import { openTempPg, requirePostgres } from '../support/postgres.js';
import { SHARED_REDIS, sharedRedisAvailable } from '../support/redis.js';
import { tempSqliteStore } from '../support/sqlite.js';
import { dropStream, readStream } from '../support/stream-events.js';

const exporter = new InMemorySpanExporter();
const provider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
provider.register();

after(() => provider.shutdown());
const redis = await sharedRedisAvailable();
const pgSkip = await requirePostgres();
const stream = `dibs-test-traced:${randomBytes(4).toString('hex')}`;
const traceId = () => randomBytes(16).toString('hex');
const spanId = () => randomBytes(8).toString('hex');

describe('tracing through the HTTP service (SQLite)', () => {
  const temp = tempSqliteStore();
  let server: RunningServer;
  let receiver: Awaited<ReturnType<typeof httpReceiver>>;
  let auth: Record<string, string>;

  before(async () => {
    receiver = await httpReceiver();
    server = await startServer({
      store: temp.store,
      port: 0,
      host: '127.0.0.1',
      logger: false,
      demo: true,
      tracing: true,
      jobsEveryMs: 50,
      rateLimit: 0,
      env: {
        DIBS_WEBHOOK_URLS: receiver.url(),
        DIBS_WEBHOOK_SECRET: 'whsec_tracing',
        ...(redis ? { DIBS_EVENT_STREAMS: `${SHARED_REDIS}?stream=${stream}` } : {}),
      },
    });
    auth = { authorization: `Bearer ${server.demoKey}`, 'content-type': 'application/json' };
  });
  after(async () => {
    await server?.close();
    await receiver?.close();
    if (redis) await dropStream(SHARED_REDIS, stream);
    temp.cleanup();
  });

  /** POSTs with a fresh caller trace; returns the answer and the caller's trace and span ids. */
  async function post(path: string, body: unknown, traced = true) {
    const parent = { traceId: traceId(), spanId: spanId() };
    const res = await fetch(`${server.url}${path}`, {
      method: 'POST',
      headers: { ...auth, ...(traced ? { traceparent: `00-${parent.traceId}-${parent.spanId}-01` } : {}) },
      body: JSON.stringify(body),
    });
    const text = await res.text();
    return { status: res.status, json: (text ? JSON.parse(text) : {}) as Record<string, unknown>, parent };
  }

  /** The spans of one trace, waiting for the server span (it ends after the answer is sent). */
  async function trace(id: string): Promise<ReadableSpan[]> {
    for (let i = 0; i < 100; i++) {
      const spans = exporter.getFinishedSpans().filter((s) => s.spanContext().traceId === id);
      if (spans.some((s) => s.kind === 1 /* SERVER */)) return spans;
      await sleep(10);
    }
    assert.fail(`no server span for trace ${id}`);
  }

  const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;
  const one = (spans: ReadableSpan[], name: string) => {
    const found = spans.filter((s) => s.name === name);
    assert.equal(found.length, 1, `one '${name}' in ${spans.map((s) => s.name).join(', ')}`);
    return found[0]!;
  };

  it('a claim: server span under the caller, facade call under it, store step under that', async () => {
    const r = await post('/v1/pools/demo/claims', { claimant: 'alice@example.com' });
    assert.equal(r.status, 201);
    const spans = await trace(r.parent.traceId);
    const http = one(spans, 'POST /v1/pools/:pool/claims');
    assert.equal(parentOf(http), r.parent.spanId, "the request continues the caller's trace");
    assert.equal(http.attributes['http.route'], '/v1/pools/:pool/claims');
    assert.equal(http.attributes['http.response.status_code'], 201);
    const facade = one(spans, 'dibs pools.claim');
    assert.equal(parentOf(facade), http.spanContext().spanId);
    const step = one(spans, 'sqlite pools.claim');
    assert.equal(parentOf(step), facade.spanContext().spanId);
    for (const span of [facade, step]) {
      assert.equal(span.attributes['dibs.store'], 'sqlite');
      assert.equal(span.attributes['dibs.operation'], 'pools.claim');
      assert.equal(span.attributes['dibs.outcome'], 'claimed');
      assert.equal(span.attributes['dibs.retries'], 0);
      assert.equal(span.attributes['dibs.target'], 'demo');
    }
    assert.ok(!JSON.stringify(spans.map((s) => s.attributes)).includes('alice'), 'claimants are never recorded');

    const again = await post('/v1/pools/demo/claims', { claimant: 'alice@example.com' });
    assert.equal(one(await trace(again.parent.traceId), 'dibs pools.claim').attributes['dibs.outcome'], 'already-held');
  });

  it('a buy: outcome bought, then sold out is an outcome, not a span error', async () => {
    const r = await post('/v1/sales/demo/claims', { customer: 'bob@example.com' });
    assert.equal(r.status, 201, JSON.stringify(r.json));
    const spans = await trace(r.parent.traceId);
    const http = one(spans, 'POST /v1/sales/:sale/claims');
    const facade = one(spans, 'dibs sales.buy');
    const step = one(spans, 'sqlite sales.buy');
    assert.equal(parentOf(http), r.parent.spanId);
    assert.equal(parentOf(facade), http.spanContext().spanId);
    assert.equal(parentOf(step), facade.spanContext().spanId);
    assert.equal(facade.attributes['dibs.outcome'], 'bought');
    assert.equal(step.attributes['dibs.operation'], 'sales.buy');

    const limited = await post('/v1/sales/demo/claims', { customer: 'bob@example.com', quantity: 5 });
    assert.equal(limited.status, 409);
    const refused = one(await trace(limited.parent.traceId), 'dibs sales.buy');
    assert.equal(refused.attributes['dibs.outcome'], (limited.json.error as { code: string }).code);
    assert.equal(refused.status.code, 0, 'UNSET: a refusal is an answer, not a failure');
  });

  it('a lock: a waiting acquire counts its repeated store attempts as retries', async () => {
    const first = await post('/v1/locks/report/acquire', { ttlMs: 10_000 });
    assert.equal(first.status, 201);
    const held = await trace(first.parent.traceId);
    const acquire = one(held, 'dibs semaphores.acquire');
    assert.equal(parentOf(acquire), one(held, 'POST /v1/locks/:key/acquire').spanContext().spanId);
    assert.equal(acquire.attributes['dibs.retries'], 0);
    const attempts = held.filter((s) => s.name === 'sqlite locks.tryAcquire');
    assert.equal(attempts.length, 1);
    assert.equal(parentOf(attempts[0]!), acquire.spanContext().spanId);

    const waiting = post('/v1/locks/report/acquire', { ttlMs: 10_000, waitMs: 5000 });
    await sleep(150);
    const released = await post('/v1/locks/report/release', { token: first.json.token });
    assert.equal(released.status, 204);
    const second = await waiting;
    assert.equal(second.status, 201);
    const spans = await trace(second.parent.traceId);
    const waited = one(spans, 'dibs semaphores.acquire');
    // attempts at the lock itself (a long wait also registers as a waiter, under another key)
    const tries = spans.filter(
      (s) =>
        s.name === 'sqlite locks.tryAcquire' &&
        s.attributes['dibs.target'] === 'report' &&
        parentOf(s) === waited.spanContext().spanId,
    );
    assert.ok(tries.length >= 2, `${tries.length} attempts`);
    assert.equal(
      waited.attributes['dibs.retries'],
      tries.length - 1,
      spans.map((s) => `${s.name} ${String(s.attributes['dibs.target'])}`).join('\n'),
    );
    assert.deepEqual(
      tries.map((s) => s.attributes['dibs.outcome']),
      [...tries.slice(0, -1).map(() => 'none'), 'ok'],
    );
  });

  it('a request without traceparent starts a trace; background jobs make no spans', async () => {
    const before = new Set(exporter.getFinishedSpans().map((s) => s.spanContext().traceId));
    const r = await post('/v1/pools/demo/claims', { claimant: 'carol@example.com' }, false);
    assert.equal(r.status, 201);
    await sleep(300); // several job rounds (every 50 ms)
    const fresh = exporter.getFinishedSpans().filter((s) => !before.has(s.spanContext().traceId));
    // deliveries are traces of their own by design (the demo sale's sale.live may go out now)
    const roots = fresh.filter((s) => s.parentSpanContext === undefined && !s.name.startsWith('dibs.outbox deliver'));
    assert.deepEqual(
      roots.map((s) => s.name),
      ['POST /v1/pools/:pool/claims'],
      'one new trace: the request (the jobs are untraced)',
    );
    assert.ok(
      fresh.every((s) => !s.name.startsWith('dibs sales.') && !s.name.startsWith('sqlite sales.')),
      'no job made a span',
    );
  });

  it('a webhook delivery (and its stream entry) carries the traceparent of its delivery span', async () => {
    // a pool that crosses its low-stock threshold: one pool.low_stock event for the webhook
    const create = await post('/v1/pools', { name: 'tiny', perClaimantLimit: 1, lowStockThreshold: 1 });
    assert.equal(create.status, 201);
    await fetch(`${server.url}/v1/pools/tiny/codes`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'text/csv' },
      body: 'code\nT-1\nT-2\n',
    });
    assert.equal((await post('/v1/pools/tiny/claims', { claimant: 'dan' })).status, 201);
    let hook: (typeof receiver.received)[number] | undefined;
    for (let i = 0; i < 200 && !hook; i++) {
      hook = receiver.received.find((r) => JSON.parse(r.body.toString()).type === 'pool.low_stock');
      if (!hook) await sleep(20);
    }
    assert.ok(hook, 'the low-stock webhook arrived');
    const header = String(hook.headers.traceparent);
    const [, tid, sid] =
      /^00-([0-9a-f]{32})-([0-9a-f]{16})-0[01]$/.exec(header) ?? assert.fail(`traceparent '${header}'`);
    let delivery: ReadableSpan | undefined;
    for (let i = 0; i < 100 && !delivery; i++) {
      delivery = exporter.getFinishedSpans().find((s) => s.spanContext().spanId === sid);
      if (!delivery) await sleep(10);
    }
    assert.ok(delivery, 'the traceparent names a finished span');
    assert.equal(delivery.spanContext().traceId, tid);
    assert.equal(delivery.name, 'dibs.outbox deliver pool.low_stock');
    assert.equal(delivery.kind, 3 /* PRODUCER */);
    assert.equal(delivery.attributes['dibs.outcome'], 'delivered');
    assert.equal(delivery.attributes['dibs.event.id'], JSON.parse(hook.body.toString()).id);
    if (redis) {
      // the same attempt appended it to the stream, with the same context
      const entry = (await readStream(SHARED_REDIS, stream)).find((e) => e.type === 'pool.low_stock');
      assert.equal(entry?.traceparent, header);
    }
  });

  it('a Dibs opened without tracing makes no spans', async () => {
    const plain = await openDibs('sqlite::memory:');
    try {
      const count = exporter.getFinishedSpans().length;
      await plain.pools.create({ name: 'quiet' });
      await plain.pools.importCodes('quiet', ['Q-1']);
      await plain.pools.claim('quiet', 'erin');
      assert.equal(exporter.getFinishedSpans().length, count);
    } finally {
      await plain.close();
    }
  });
});

it('postgres: a claim run again inside a transaction shows one retry on its store step and its call', {
  skip: pgSkip,
}, async () => {
  const admin = await openTempPg();
  const traced = await openDibs(admin.store, { tracing: true });
  try {
    await admin.dibs.pools.create({ name: 'p', lowStockThreshold: 1 });
    await admin.dibs.pools.importCodes('p', ['A', 'B', 'C']);
    await traced.pools.claim('p', 'x'); // this process learns the threshold here
    await traced.pools.claim('p', 'y');
    const claims = exporter
      .getFinishedSpans()
      .filter((s) => s.attributes['dibs.store'] === 'postgres' && s.attributes['dibs.operation'] === 'pools.claim');
    assert.deepEqual(
      claims.map((s) => [s.name, s.attributes['dibs.outcome'], s.attributes['dibs.retries']]),
      [
        ['postgres pools.claim', 'claimed', 1],
        ['dibs pools.claim', 'claimed', 1],
        ['postgres pools.claim', 'claimed', 0],
        ['dibs pools.claim', 'claimed', 0],
      ],
    );
  } finally {
    await traced.close();
    await admin.cleanup();
  }
});
