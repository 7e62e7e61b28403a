/**
 * Which Redis failures are `unavailable`: every server state that refuses to serve for a while, by
 * its reply's error code (as Redis 7 passes it through a script, and as Redis 6 wrapped it), the
 * client's connection errors — and nothing else (a script's own error stays an error, even when
 * its text mentions one of those codes). The states are produced for real in server-states.test.ts.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ReplyError } from 'ioredis';
import { translateRedisError } from '../../src/backends/redis/errors.js';
import { isDibsError } from '../../src/index.js';

const reply = (message: string): Error => new ReplyError(message) as Error;

const STATES: Record<string, string> = {
  READONLY: "READONLY You can't write against a read only replica.",
  OOM: "OOM command not allowed when used memory > 'maxmemory'.",
  MISCONF: 'MISCONF Redis is configured to save RDB snapshots, but it is currently unable to persist to disk.',
  NOREPLICAS: 'NOREPLICAS Not enough good replicas to write.',
  LOADING: 'LOADING Redis is loading the dataset in memory',
  BUSY: 'BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE.',
  MASTERDOWN: "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
  CLUSTERDOWN: 'CLUSTERDOWN The cluster is down',
  TRYAGAIN: 'TRYAGAIN Multiple keys request during rehashing of slot',
};

describe('translateRedisError', () => {
  for (const [code, message] of Object.entries(STATES)) {
    it(`${code} → unavailable, plain, inside a script (Redis 7) and wrapped (Redis 6)`, () => {
      for (const text of [
        message,
        `${message} script: ae3467fc, on @user_script:1.`,
        `ERR Error running script (call to f_ae3467fc): @user_script:1: @user_script: 1: -${message}`,
      ]) {
        const error = translateRedisError(reply(text));
        assert.ok(isDibsError(error, 'unavailable'), `${text} → ${String(error)}`);
        assert.equal(error.retriable, true);
        assert.deepEqual(error.details, { reason: code, retryAfterMs: 1000 });
      }
    });
  }

  it('connection errors → unavailable', () => {
    for (const text of [
      'connect ECONNREFUSED 127.0.0.1:1',
      'Connection is closed.',
      'Command timed out',
      "Stream isn't writeable and enableOfflineQueue options is false",
    ]) {
      assert.ok(isDibsError(translateRedisError(new Error(text)), 'unavailable'), text);
    }
  });

  it('anything else stays what it was', () => {
    for (const text of [
      'WRONGTYPE Operation against a key holding the wrong kind of value',
      'ERR user script: saw LOADING and OOM in a value',
      'NOSCRIPT No matching script.',
      'ERR Error running script: @user_script:3: bad argument',
    ]) {
      const error = reply(text);
      assert.equal(translateRedisError(error), error, text);
    }
  });
});
