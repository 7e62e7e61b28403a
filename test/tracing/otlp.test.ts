/**
 * `dibs serve` with the standard OTEL_* variables exports its spans over OTLP/HTTP: a real serve
 * process against a test-owned receiver of POST /v1/traces. Also: settings that cannot work stop
 * the start (exit 2), and with the SDK packages missing a traced start names what to install.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { CLI_ARGS, ROOT } from '../support/cli.js';
import { httpReceiver } from '../support/receivers.js';
import { tempSqliteStore } from '../support/sqlite.js';
import { tracingExporters } from '../../src/tracing/sdk.js';

interface OtlpValue {
  stringValue?: string;
  intValue?: string | number;
  boolValue?: boolean;
}
interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  attributes: { key: string; value: OtlpValue }[];
}
interface OtlpExport {
  resourceSpans: {
    resource: { attributes: { key: string; value: OtlpValue }[] };
    scopeSpans: { scope: { name: string }; spans: OtlpSpan[] }[];
  }[];
}

/** OTLP/JSON ids are hex; tolerate base64 too. */
const hex = (id: string | undefined) =>
  id === undefined || id === ''
    ? undefined
    : /^[0-9a-f]+$/i.test(id)
      ? id.toLowerCase()
      : Buffer.from(id, 'base64').toString('hex');
const attr = (list: { key: string; value: OtlpValue }[], key: string) => {
  const v = list.find((a) => a.key === key)?.value;
  return v?.stringValue ?? (v?.intValue !== undefined ? Number(v.intValue) : v?.boolValue);
};

describe('dibs serve exports spans over OTLP/HTTP', () => {
  const temp = tempSqliteStore();
  let receiver: Awaited<ReturnType<typeof httpReceiver>>;
  let child: ReturnType<typeof spawn>;
  let exited: Promise<number | null>;
  let url = '';
  let key = '';

  before(async () => {
    receiver = await httpReceiver();
    child = spawn(
      process.execPath,
      [...CLI_ARGS, 'serve', '--port', '0', '--demo', '--no-jobs', '--store', temp.store],
      {
        cwd: ROOT,
        env: {
          ...process.env,
          LOG_LEVEL: 'warn',
          OTEL_EXPORTER_OTLP_ENDPOINT: receiver.url(''),
          OTEL_SERVICE_NAME: 'dibs-otlp-test',
          OTEL_BSP_SCHEDULE_DELAY: '50',
        },
        stdio: ['ignore', 'ignore', 'pipe'],
      },
    );
    exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    let stderr = '';
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`dibs serve did not start within 60 s:\n${stderr}`)), 60_000);
      child.stderr!.on('data', (d: Buffer) => {
        stderr += d.toString();
        const served = /dibs is serving (http:\/\/\S+)/.exec(stderr);
        const demo = /\n\s+(dibs_\S+)\n/.exec(stderr);
        if (served && demo) {
          clearTimeout(timer);
          url = served[1]!;
          key = demo[1]!;
          resolve();
        }
      });
      void exited.then(() => reject(new Error(`dibs serve exited early:\n${stderr}`)));
    });
  });
  after(async () => {
    if (child && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await exited;
    }
    await receiver?.close();
    temp.cleanup();
  });

  const exported = (): { resource: OtlpExport['resourceSpans'][number]['resource']; span: OtlpSpan }[] =>
    receiver.received
      .filter((r) => r.path === '/v1/traces')
      .flatMap((r) =>
        (JSON.parse(r.body.toString()) as OtlpExport).resourceSpans.flatMap((rs) =>
          rs.scopeSpans.flatMap((ss) => ss.spans.map((span) => ({ resource: rs.resource, span }))),
        ),
      );

  it('a claim with a traceparent arrives as one trace: request, facade call, store step', async () => {
    const traceId = randomBytes(16).toString('hex');
    const parent = randomBytes(8).toString('hex');
    const res = await fetch(`${url}/v1/pools/demo/claims`, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        traceparent: `00-${traceId}-${parent}-01`,
      },
      body: JSON.stringify({ claimant: 'otlp@example.com' }),
    });
    assert.equal(res.status, 201);
    let spans: ReturnType<typeof exported> = [];
    for (let i = 0; i < 300 && spans.length < 3; i++) {
      spans = exported().filter((s) => hex(s.span.traceId) === traceId);
      if (spans.length < 3) await sleep(20);
    }
    const byName = new Map(spans.map((s) => [s.span.name, s]));
    const http = byName.get('POST /v1/pools/:pool/claims');
    const facade = byName.get('dibs pools.claim');
    const step = byName.get('sqlite pools.claim');
    assert.ok(http && facade && step, `spans: ${[...byName.keys()].join(', ')}`);
    assert.equal(hex(http.span.parentSpanId), parent);
    assert.equal(hex(facade.span.parentSpanId), hex(http.span.spanId));
    assert.equal(hex(step.span.parentSpanId), hex(facade.span.spanId));
    assert.equal(attr(step.span.attributes, 'dibs.outcome'), 'claimed');
    assert.equal(attr(step.span.attributes, 'dibs.retries'), 0);
    assert.equal(attr(http.resource.attributes, 'service.name'), 'dibs-otlp-test');
    assert.match(String(attr(http.resource.attributes, 'service.version')), /^\d+\.\d+\.\d+/);
  });

  it('SIGTERM flushes what is batched and exits 0', async () => {
    const traceId = randomBytes(16).toString('hex');
    await fetch(`${url}/v1/pools/demo`, {
      headers: { authorization: `Bearer ${key}`, traceparent: `00-${traceId}-${randomBytes(8).toString('hex')}-01` },
    });
    child.kill('SIGTERM');
    assert.equal(await exited, 0);
    assert.ok(
      exported().some((s) => hex(s.span.traceId) === traceId && s.span.name === 'GET /v1/pools/:pool'),
      "the last request's span was exported before exit",
    );
  });
});

describe('tracing settings that cannot work stop dibs serve', () => {
  it('OTLP over gRPC and unknown exporters are refused (serve checks them before it starts: exit 2); off by default', () => {
    assert.throws(
      () =>
        tracingExporters({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://127.0.0.1:4317', OTEL_EXPORTER_OTLP_PROTOCOL: 'grpc' }),
      (e: Error & { code?: string }) =>
        e.code === 'invalid_input' && /OTEL_EXPORTER_OTLP_PROTOCOL=grpc/.test(e.message),
    );
    assert.throws(
      () => tracingExporters({ OTEL_TRACES_EXPORTER: 'zipkin' }),
      /OTEL_TRACES_EXPORTER: unsupported exporter\(s\) 'zipkin'/,
    );
    assert.deepEqual(tracingExporters({}), [], 'off by default');
    assert.deepEqual(tracingExporters({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }), ['otlp']);
    assert.deepEqual(
      tracingExporters({ OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318', OTEL_SDK_DISABLED: 'true' }),
      [],
    );
    assert.deepEqual(
      tracingExporters({ OTEL_TRACES_EXPORTER: 'none', OTEL_EXPORTER_OTLP_ENDPOINT: 'http://collector:4318' }),
      [],
    );
  });

  it('without the SDK packages: unsupported, naming what to install', async () => {
    const hidden = await new Promise<{ code: number | null; stderr: string }>((resolve) => {
      const c = spawn(
        process.execPath,
        [
          '--import',
          './test/support/hide-package.mjs',
          ...CLI_ARGS,
          'serve',
          '--port',
          '0',
          '--store',
          'sqlite::memory:',
        ],
        {
          cwd: ROOT,
          env: { ...process.env, DIBS_HIDE_PACKAGES: '@opentelemetry/sdk-trace-node', OTEL_TRACES_EXPORTER: 'console' },
          stdio: ['ignore', 'ignore', 'pipe'],
        },
      );
      let stderr = '';
      c.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
      const timer = setTimeout(() => c.kill('SIGKILL'), 60_000);
      c.once('exit', (code) => {
        clearTimeout(timer);
        resolve({ code, stderr });
      });
    });
    assert.notEqual(hidden.code, 0, hidden.stderr);
    assert.match(hidden.stderr, /unsupported.*npm install @opentelemetry\/api @opentelemetry\/sdk-trace-node/s);
  });
});
