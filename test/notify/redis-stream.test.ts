/**
 * Outbox events to a Redis stream, against the real local Redis (127.0.0.1:6379): in outbox order
 * and once each, held back and retried in order while the destination is broken, dead-lettered
 * after the retry budget, and nothing lost (nor doubled) when a dispatcher process is killed
 * mid-delivery. Judged by the stream's content against the store's record of its events.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDibs, type Dibs } from '../../src/index.js';
import { OutboxDispatcher } from '../../src/notify/dispatcher.js';
import { parseStreamTarget, RedisStreamDestination } from '../../src/notify/redis-stream.js';
import { checkDeliveryEnv, startServer } from '../../src/service/server.js';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js';
import { startDelayRelay } from '../support/delay-relay.js';
import { SHARED_REDIS, sharedRedisAvailable } from '../support/redis.js';
import { tempSqliteStore } from '../support/sqlite.js';
import { addEvents, allEvents, dropStream, eventPool, readStream } from '../support/stream-events.js';
import { ROOT } from '../support/cli.js';
import { workerArgs } from '../support/node-worker.js';

const REDIS = new URL(SHARED_REDIS);
const skip = !(await sharedRedisAvailable());
const fast = { baseMs: 10, maxMs: 40 };

/** A store with an event pool, a fresh stream name, and cleanup for both. */
function streamSuite() {
  const temp = tempSqliteStore();
  const stream = `dibs-test-stream:${randomBytes(4).toString('hex')}`;
  const env = { dibs: undefined as unknown as Dibs, stream, store: temp.store };
  before(async () => {
    env.dibs = await openDibs(temp.store);
    await eventPool(env.dibs);
  });
  after(async () => {
    await env.dibs?.close();
    await dropStream(SHARED_REDIS, stream);
    temp.cleanup();
  });
  return env;
}

/** Runs dispatcher batches until nothing is pending, bounded. */
async function settle(dibs: Dibs, dispatcher: OutboxDispatcher, ms = 10_000): Promise<void> {
  const deadline = Date.now() + ms;
  while ((await dibs.backend.outbox.status()).pending > 0) {
    assert.ok(
      Date.now() < deadline,
      `still pending after ${ms} ms: ${JSON.stringify(await dibs.backend.outbox.status())}`,
    );
    await dispatcher.runOnce();
    await sleep(5);
  }
}

/** The stream's entries as positions in the outbox (for a failure message). */
const positions = (entries: Record<string, string>[], events: { id: string }[]) =>
  entries.map((e) => events.findIndex((x) => x.id === e.id)).join(' ');

const destinationUrl = (host: string, port: number, stream: string) =>
  `redis://${host}:${port}${REDIS.pathname}?stream=${encodeURIComponent(stream)}`;

describe('Redis stream destination: settings', { skip }, () => {
  it('a destination URL names a stream; bad ones are refused at start, naming the variable', () => {
    assert.deepEqual(parseStreamTarget('redis://u:p@h:6380/2?stream=shop:events&maxlen=1000'), {
      redisUrl: 'redis://u:p@h:6380/2',
      stream: 'shop:events',
      maxLen: 1000,
    });
    assert.equal(parseStreamTarget('rediss://h').stream, 'dibs:events');
    for (const [bad, message] of [
      ['nats://h:4222', /unsupported destination 'nats:'/],
      ['redis://h?strem=x', /unknown parameter\(s\) 'strem'/],
      ['redis://h?maxlen=0', /maxlen must be a positive integer/],
      ['not a url', /is not a URL/],
    ] as const) {
      assert.throws(
        () => checkDeliveryEnv({ DIBS_EVENT_STREAMS: `redis://ok, ${bad}` }),
        (e: Error & { code?: string; field?: string }) =>
          e.code === 'invalid_input' && e.field === 'DIBS_EVENT_STREAMS' && message.test(e.message),
      );
    }
  });
});

describe('Redis stream destination: in order, once each', { skip }, () => {
  const env = streamSuite();
  it('delivers every event in outbox order with its envelope; a redelivery appends nothing', async () => {
    await addEvents(env.dibs, 30);
    const destination = await RedisStreamDestination.open(
      destinationUrl(REDIS.hostname, Number(REDIS.port || 6379), env.stream),
    );
    try {
      const dispatcher = new OutboxDispatcher({
        outbox: env.dibs.backend.outbox,
        destinations: [destination],
        batchSize: 7,
        backoff: fast,
      });
      await settle(env.dibs, dispatcher);
      const events = await allEvents(env.dibs);
      const entries = await readStream(SHARED_REDIS, env.stream);
      assert.deepEqual(
        entries.map((e) => e.id),
        events.map((e) => e.id),
        'the stream holds every event once, in outbox order',
      );
      const last = events.at(-1)!;
      assert.deepEqual(entries.at(-1), {
        id: last.id,
        type: last.type,
        idempotencyKey: last.idempotencyKey,
        createdAt: last.createdAt,
        data: JSON.stringify(last.payload),
      });
      assert.match(await destination.deliver({ ...last, attempts: 1 }), /already there as \d+-\d+/);
      assert.equal((await readStream(SHARED_REDIS, env.stream)).length, events.length);
      assert.match(
        (await env.dibs.backend.outbox.deliveries(last.id))[0]!.detail,
        new RegExp(`XADD ${env.stream}: \\d+-\\d+`),
      );
    } finally {
      await destination.close();
    }
  });
});

describe('Redis stream destination: a broken destination', { skip }, () => {
  const env = streamSuite();
  let proxy: FaultProxy;
  before(async () => (proxy = await startFaultProxy({ host: REDIS.hostname, port: Number(REDIS.port || 6379) })));
  after(() => proxy?.close());

  it('retries while it is down, and the held-back events still arrive in outbox order', async () => {
    const destination = await RedisStreamDestination.open(destinationUrl(proxy.host, proxy.port, env.stream), {
      backoff: { baseMs: 30, maxMs: 120 },
      timeoutMs: 1000,
    });
    try {
      const dispatcher = new OutboxDispatcher({
        outbox: env.dibs.backend.outbox,
        destinations: [destination],
        batchSize: 10,
        backoff: fast,
        maxAttempts: 1000,
      });
      await addEvents(env.dibs, 12);
      await settle(env.dibs, dispatcher); // delivered while up
      proxy.refuse(true);
      proxy.reset(); // the open connection dies, new ones are refused: the destination is down
      await addEvents(env.dibs, 15);
      let retried = 0;
      for (const deadline = Date.now() + 1500; Date.now() < deadline; await sleep(20))
        retried += (await dispatcher.runOnce()).retried;
      assert.ok(retried >= 15, `${retried} failed attempts while down`);
      await addEvents(env.dibs, 10); // newer events must not overtake the held-back ones
      for (let i = 0; i < 5; i++) await dispatcher.runOnce();
      proxy.refuse(false);
      await settle(env.dibs, dispatcher, 20_000);
      const events = await allEvents(env.dibs);
      const entries = await readStream(SHARED_REDIS, env.stream);
      assert.deepEqual(
        entries.map((e) => e.id),
        events.map((e) => e.id),
        `every event once, in outbox order, after the outage: ${positions(entries, events)}`,
      );
      const log = await env.dibs.backend.outbox.deliveries(events[12]!.id);
      assert.ok(log.length >= 2 && !log[0]!.ok && log.at(-1)!.ok, JSON.stringify(log));
      assert.equal((await env.dibs.backend.outbox.status()).dead, 0);
    } finally {
      await destination.close();
    }
  });
});

describe('Redis stream destination: dead letters', { skip }, () => {
  const env = streamSuite();
  it('an event is dead-lettered after the retry budget, every attempt logged; nothing reaches the stream', async () => {
    const proxy = await startFaultProxy({ host: REDIS.hostname, port: Number(REDIS.port || 6379) });
    proxy.refuse(true);
    const destination = await RedisStreamDestination.open(destinationUrl(proxy.host, proxy.port, env.stream), {
      backoff: { baseMs: 5, maxMs: 20 },
      timeoutMs: 1000,
    });
    try {
      await addEvents(env.dibs, 4);
      const dispatcher = new OutboxDispatcher({
        outbox: env.dibs.backend.outbox,
        destinations: [destination],
        backoff: fast,
        maxAttempts: 3,
      });
      await settle(env.dibs, dispatcher);
      const status = await env.dibs.backend.outbox.status();
      const events = await allEvents(env.dibs);
      assert.equal(status.dead, events.length);
      for (const event of events) {
        const log = await env.dibs.backend.outbox.deliveries(event.id);
        assert.equal(log.length, 3, JSON.stringify(log));
        assert.ok(
          log.every((a) => !a.ok && a.detail.startsWith(`XADD ${env.stream}:`)),
          JSON.stringify(log),
        );
      }
      assert.equal((await readStream(SHARED_REDIS, env.stream)).length, 0);
    } finally {
      await destination.close();
      await proxy.close();
    }
  });
});

describe('Redis stream destination: a dispatcher killed mid-delivery', { skip }, () => {
  const env = streamSuite();
  it('its leased events are delivered again by the next one: none lost, none doubled', async () => {
    await addEvents(env.dibs, 60);
    // each append crosses a 25 ms link each way: the run is still going when it is killed
    const relay = await startDelayRelay({ host: REDIS.hostname, port: Number(REDIS.port || 6379) }, 25);
    const url = destinationUrl(relay.host, relay.port, env.stream);
    const child = spawn(process.execPath, [...workerArgs('test/support/stream-dispatch-worker.ts'), env.store, url], {
      cwd: ROOT,
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
    const killer = setTimeout(() => child.kill('SIGKILL'), 60_000);
    let stderr = '';
    child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
    try {
      for (let n = 0; n < 10; await sleep(10)) {
        assert.ok(child.exitCode === null, `the worker ended before it was killed: ${stderr}`);
        n = (await readStream(SHARED_REDIS, env.stream)).length;
      }
      child.kill('SIGKILL');
      await exited;
      const before = (await readStream(SHARED_REDIS, env.stream)).length;
      assert.ok(before < 60, `killed mid-delivery (${before} of 60 appended)`);
      assert.ok((await env.dibs.backend.outbox.status()).pending > 0);
      const destination = await RedisStreamDestination.open(url, { backoff: fast });
      try {
        await settle(
          env.dibs,
          new OutboxDispatcher({ outbox: env.dibs.backend.outbox, destinations: [destination], backoff: fast }),
          20_000,
        );
      } finally {
        await destination.close();
      }
      const events = await allEvents(env.dibs);
      const entries = await readStream(SHARED_REDIS, env.stream);
      // Exactly once; the order is not asserted: the killed run's leased events come back when
      // their lease ends, after newer ones (docs/operations.md says so).
      assert.deepEqual(
        entries.map((e) => e.id).sort(),
        events.map((e) => e.id).sort(),
        `every event exactly once: ${positions(entries, events)}`,
      );
      assert.equal(entries.length, events.length);
      assert.equal((await env.dibs.backend.outbox.status()).delivered, events.length);
    } finally {
      clearTimeout(killer);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
      await relay.close();
    }
  });
});

describe('Redis stream destination: configured for the service (DIBS_EVENT_STREAMS)', { skip }, () => {
  it('the service delivers pool events to the stream, and closes the destination on shutdown', async () => {
    const temp = tempSqliteStore();
    const stream = `dibs-test-stream:${randomBytes(4).toString('hex')}`;
    const server = await startServer({
      store: temp.store,
      port: 0,
      host: '127.0.0.1',
      logger: false,
      jobsEveryMs: 50,
      env: { DIBS_EVENT_STREAMS: destinationUrl(REDIS.hostname, Number(REDIS.port || 6379), stream) },
    });
    try {
      await server.dibs.pools.create({ name: 'tiny', lowStockThreshold: 1 });
      await server.dibs.pools.importCodes('tiny', ['T-1', 'T-2']);
      await server.dibs.pools.claim('tiny', 'ann');
      let entries: Record<string, string>[] = [];
      for (const deadline = Date.now() + 10_000; entries.length === 0 && Date.now() < deadline; await sleep(20))
        entries = await readStream(SHARED_REDIS, stream);
      assert.equal(entries.length, 1);
      assert.equal(entries[0]!.type, 'pool.low_stock');
      assert.equal(JSON.parse(entries[0]!.data!).pool, 'tiny');
    } finally {
      await server.close();
      await dropStream(SHARED_REDIS, stream);
      temp.cleanup();
    }
  });
});
