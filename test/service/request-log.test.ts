/**
 * Each request's logger (src/service/request-logger.ts) is made only when a line gets through
 * the level: what is written is what a pino child bound to the request id writes — the request id
 * on every line of the request (its own lines, the access log, children of it), nothing below the
 * configured level.
 */
import assert from 'node:assert/strict';
import { Writable } from 'node:stream';
import { describe, it } from 'node:test';
import { buildServer } from '../../src/service/app.js';
import { openTempSqlite } from '../support/sqlite.js';

type Line = Record<string, unknown> & { level: number; msg?: string; reqId?: string };

async function serviceLogging(level: string) {
  const env = await openTempSqlite();
  const lines: Line[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const text of chunk.toString('utf8').split('\n')) if (text) lines.push(JSON.parse(text) as Line);
      done();
    },
  });
  const app = buildServer({ dibs: env.dibs, rateLimit: false, logger: { level, stream } });
  // Routes outside /v1 with no declaration are public: a request that logs at each level.
  app.get('/log-test', async (request) => {
    assert.equal(request.log.level, level);
    request.log.debug('a debug line');
    request.log.info({ step: 1 }, 'an info line');
    request.log.warn({ step: 2 }, 'a warning');
    request.log.child({ part: 'inner' }).warn('from a child');
    return { ok: true };
  });
  await app.ready();
  const get = async (requestId: string) => {
    const res = await app.inject({ method: 'GET', url: '/log-test', headers: { 'x-request-id': requestId } });
    assert.equal(res.statusCode, 200);
    await new Promise((resolve) => setImmediate(resolve));
    return lines.filter((line) => line.reqId === requestId);
  };
  return {
    lines,
    get,
    close: async () => {
      await app.close();
      await env.cleanup();
    },
  };
}

describe('request logs', () => {
  it('at warn: the warnings of a request, its id on each, nothing below warn and no access-log line', async () => {
    const svc = await serviceLogging('warn');
    try {
      const mine = await svc.get('req-warn-1');
      assert.deepEqual(
        mine.map((line) => [line.level, line.msg, line.step ?? line.part]),
        [
          [40, 'a warning', 2],
          [40, 'from a child', 'inner'],
        ],
      );
      assert.ok(
        svc.lines.every((line) => line.level >= 40),
        JSON.stringify(svc.lines.filter((line) => line.level < 40)),
      );
    } finally {
      await svc.close();
    }
  });

  it('at debug: every line of the request with its id, and the access-log line with its status', async () => {
    const svc = await serviceLogging('debug');
    try {
      const mine = await svc.get('req-debug-1');
      assert.deepEqual(
        mine.map((line) => [line.level, line.msg]),
        [
          [20, 'a debug line'],
          [30, 'an info line'],
          [40, 'a warning'],
          [40, 'from a child'],
          [30, 'request completed'],
        ],
      );
      const completed = mine.at(-1)!;
      assert.equal((completed.res as { statusCode: number }).statusCode, 200);
      assert.equal((completed.req as { url: string }).url, '/log-test');
      // Two requests: each line carries its own request's id.
      const other = await svc.get('req-debug-2');
      assert.equal(other.length, 5);
    } finally {
      await svc.close();
    }
  });
});
