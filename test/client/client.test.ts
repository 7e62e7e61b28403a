/**
 * dibs/client against the real service (SQLite store) over real HTTP, with an HTTP proxy between
 * them that loses answers, answers 503/429 with Retry-After, or never answers.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isDibsError } from '../../src/client/index.js';
import { serveOverHttp, type ServedDibs } from '../support/client.js';
import { startHttpFaultProxy, type HttpFaultProxy } from '../support/http-fault-proxy.js';
import { openTempSqlite } from '../support/sqlite.js';

describe('dibs/client: retries, idempotency, timeouts, runExclusive', () => {
  let env: Awaited<ReturnType<typeof openTempSqlite>>;
  let served: ServedDibs;
  let proxy: HttpFaultProxy;
  const client = (options = {}) =>
    served.client({ baseUrl: proxy.baseUrl, retry: { baseDelayMs: 20, maxDelayMs: 200 }, ...options });

  before(async () => {
    env = await openTempSqlite();
    served = await serveOverHttp(env.dibs);
    proxy = await startHttpFaultProxy(served.baseUrl);
  });
  after(async () => {
    await proxy?.close();
    await served?.close();
    await env?.cleanup();
  });

  it('a write whose answer is lost is retried with the same Idempotency-Key and acts once', async () => {
    const c = client();
    await c.pools.create({ name: 'lost-answer', perClaimantLimit: 10 });
    await c.pools.importCodes('lost-answer', ['A', 'B', 'C']);
    const from = proxy.seen.length;
    proxy.script('drop-answer', 'drop-answer');
    const claim = await c.pools.claim('lost-answer', 'alice');
    const attempts = proxy.seen.slice(from);
    assert.equal(attempts.length, 3, 'two lost answers, then the replay');
    assert.ok(attempts[0]!.idempotencyKey, 'the call carries a key');
    assert.ok(
      attempts.every((a) => a.idempotencyKey === attempts[0]!.idempotencyKey),
      `one key for every attempt: ${attempts.map((a) => a.idempotencyKey).join(', ')}`,
    );
    assert.equal((await c.pools.stats('lost-answer')).claimed, 1, 'one code claimed, not three');
    assert.deepEqual(
      (await c.pools.holdings('lost-answer', 'alice')).map((h) => h.code),
      [claim.code],
    );

    await c.counters.reset('lost-answer');
    proxy.script('drop-answer');
    assert.equal((await c.counters.incr('lost-answer', 5)).value, 5);
    assert.equal((await c.counters.get('lost-answer')).value, 5, 'the retried increment was replayed, not added twice');
  });

  it('two logical calls get two keys (a second claim is a second claim)', async () => {
    const c = client();
    await c.pools.create({ name: 'two-calls', perClaimantLimit: 10 });
    await c.pools.importCodes('two-calls', ['A', 'B']);
    const a = await c.pools.claim('two-calls', 'bob');
    const b = await c.pools.claim('two-calls', 'bob');
    assert.notEqual(a.code, b.code);
  });

  it('503 and 429 are retried after Retry-After; a final answer (409 sold_out) is not', async () => {
    const c = client();
    await c.pools.create({ name: 'retry-after' });
    await c.pools.importCodes('retry-after', ['ONLY']);
    let from = proxy.seen.length;
    proxy.script({ status: 503, retryAfter: '1' }, { status: 429, retryAfter: '1' });
    const started = Date.now();
    const claim = await c.pools.claim('retry-after', 'carol');
    assert.equal(claim.code, 'ONLY');
    const attempts = proxy.seen.slice(from);
    assert.equal(attempts.length, 3);
    for (let i = 1; i < 3; i++)
      assert.ok(
        attempts[i]!.at - attempts[i - 1]!.at >= 950,
        `waited Retry-After (1 s): ${attempts[i]!.at - attempts[i - 1]!.at} ms`,
      );
    assert.ok(Date.now() - started < 10_000);

    from = proxy.seen.length;
    await assert.rejects(c.pools.claim('retry-after', 'dave'), (e) => isDibsError(e, 'sold_out'));
    assert.equal(proxy.seen.length - from, 1, 'sold_out is final: one attempt');
  });

  it('gives up after its attempts with the last error, typed unavailable', async () => {
    const c = client({ retry: { attempts: 3, baseDelayMs: 10, maxDelayMs: 20 } });
    const from = proxy.seen.length;
    proxy.script({ status: 503 }, { status: 503 }, { status: 503 });
    await assert.rejects(c.pools.get('retry-after'), (e) => isDibsError(e, 'unavailable') && e.status === 503);
    assert.equal(proxy.seen.length - from, 3);
  });

  it('a call that gets no answer ends at its timeout, typed unavailable', async () => {
    const c = client();
    proxy.script('stall');
    const started = Date.now();
    await assert.rejects(
      c.pools.get('retry-after', { timeoutMs: 500 }),
      (e) => isDibsError(e, 'unavailable') && /within 500 ms/.test(e.message),
    );
    const took = Date.now() - started;
    assert.ok(took >= 450 && took < 5_000, `ended near its timeout: ${took} ms`);
  });

  it('answers carry the library error codes and fields', async () => {
    const c = client();
    await assert.rejects(c.pools.get('no-such-pool'), (e) => isDibsError(e, 'not_found') && e.status === 404);
    await assert.rejects(
      c.pools.create({ name: 'has space' }),
      (e) => isDibsError(e, 'invalid_input') && e.field === 'name',
    );
  });

  it('runExclusive renews past the TTL, and fires the lost-lease signal when the lease is taken away', async () => {
    const c = client();
    const fences: number[] = [];
    const result = await c.locks.runExclusive(
      'client-run',
      async (signal, lease) => {
        fences.push(lease.fence);
        await new Promise((resolve) => setTimeout(resolve, 2_500));
        assert.equal(signal.aborted, false, 'renewed: the lease outlived its 1 s TTL');
        return 'done';
      },
      { ttlMs: 1_000 },
    );
    assert.equal(result, 'done');
    assert.equal((await c.locks.inspect('client-run')).holders.length, 0, 'released after fn');

    // The lease is lost: its renewals are refused (the store's lease is gone: released behind our back).
    const reason = await c.locks.runExclusive(
      'client-run',
      async (signal, lease) => {
        await env.dibs.locks.release({ ...lease, limit: 1 } as never);
        return await new Promise<unknown>((resolve) =>
          signal.addEventListener('abort', () => resolve(signal.reason), { once: true }),
        );
      },
      { ttlMs: 1_000 },
    );
    assert.ok(isDibsError(reason, 'lease_lost'), String(reason));
  });

  it('a lock acquire whose answer is lost is replayed: no orphan lease holds the key', async () => {
    const c = client();
    proxy.script('drop-answer');
    const lease = await c.locks.acquire('client-orphan', { ttlMs: 30_000 });
    const info = await c.locks.inspect('client-orphan');
    assert.equal(info.holders.length, 1, 'one holder: the retry got the same lease');
    await c.locks.release(lease);
    assert.equal((await c.locks.inspect('client-orphan')).holders.length, 0);
  });
});
