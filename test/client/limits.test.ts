/** dibs/client's `limits` against the real service (SQLite store) over real HTTP. */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { isDibsError } from '../../src/client/index.js';
import { serveOverHttp, type ServedDibs } from '../support/client.js';
import { openTempSqlite } from '../support/sqlite.js';

describe('dibs/client: limits', () => {
  let env: Awaited<ReturnType<typeof openTempSqlite>>;
  let served: ServedDibs;

  before(async () => {
    env = await openTempSqlite();
    served = await serveOverHttp(env.dibs);
  });
  after(async () => {
    await served?.close();
    await env?.cleanup();
  });

  it('defines, takes until denied with the exact wait, waits, resets and deletes', async () => {
    const c = served.client();
    // one unit per 2 s, two at once: a loaded machine's round trips do not refill it mid-test
    const def = await c.limits.create({ name: 'api', algorithm: 'token-bucket', limit: 1, periodMs: 2000, burst: 2 });
    assert.equal(def.burst, 2);
    assert.deepEqual(
      (await c.limits.list()).map((d) => d.name),
      ['api'],
    );
    assert.equal((await c.limits.take('api', 2, { key: 'u1' })).allowed, true);
    const denied = await c.limits.take('api', 1, { key: 'u1' });
    assert.ok(!denied.allowed && denied.retryAfterMs > 0 && denied.retryAfterMs <= 2000, JSON.stringify(denied));
    assert.equal((await c.limits.waitFor('api', 1, { key: 'u1', waitMs: 10_000 })).allowed, true);
    await c.limits.update('api', { limit: 1, periodMs: 3_600_000, burst: 1 });
    assert.equal((await c.limits.take('api', 1, { key: 'u2' })).allowed, true);
    await assert.rejects(
      c.limits.waitFor('api', 1, { key: 'u2', waitMs: 100, retry: { attempts: 1 } } as never),
      (e: unknown) => isDibsError(e, 'rate_limited'),
    );
    const empty = await c.limits.peek('api', 1, { key: 'u2' });
    assert.ok(!empty.allowed && empty.retryAfterMs > 0, `peek reads the wait: ${JSON.stringify(empty)}`);
    await c.limits.reset('api', { key: 'u2' });
    const full = await c.limits.peek('api', 1, { key: 'u2' });
    assert.ok(full.allowed && full.remaining === 0, `peek after the reset: ${JSON.stringify(full)}`);
    assert.equal((await c.limits.take('api', 1, { key: 'u2' })).allowed, true, 'the peek took nothing');
    await assert.rejects(c.limits.peek('api', 2), (e: unknown) => isDibsError(e, 'invalid_input'));
    await c.limits.delete('api');
    await assert.rejects(c.limits.get('api'), (e: unknown) => isDibsError(e, 'not_found'));
  });
});
