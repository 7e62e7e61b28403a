/**
 * A claim storm whose replies keep getting lost: 3 processes claim through a fault proxy that
 * every few hundred ms holds the replies, lets the store act and resets every connection, so
 * ioredis re-sends whatever was in flight (the same requests run twice). Half the claims carry
 * no idempotency key and the limit is 3, the case a re-send used to turn into a second code. The
 * audit is judged by the acknowledged answers: no code is held without an answer that gave it
 * (I5), none given twice (I1), counters equal the ledger (I4).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDibs, type Dibs } from '../../src/index.js';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js';
import { deletePrefix, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';
import { runCounterStorm } from '../support/lock-storm.js';
import { assertStormInvariants, runClaimStorm } from '../support/storm.js';

const available = await sharedRedisAvailable();

/** Every ~0.45 s: hold the replies, let the store act, reset every connection (ioredis re-sends). */
function loseReplies(proxy: FaultProxy): { start: () => void; stop: () => Promise<number> } {
  let on = true;
  let lost = 0;
  let loop: Promise<void> = Promise.resolve();
  return {
    start: () => {
      loop = (async () => {
        while (on) {
          await sleep(300);
          const held = proxy.holdReplies(400);
          await sleep(150); // requests reach the store and run; their replies wait here
          proxy.reset();
          lost++;
          await held;
        }
      })();
    },
    stop: async () => {
      on = false;
      await loop;
      return lost;
    },
  };
}
const CODES = 1_500;

describe('redis: a claim storm with its replies lost and its scripts re-sent', { skip: !available }, () => {
  let proxy: FaultProxy;
  let dibs: Dibs;
  const prefix = testPrefix();

  before(async () => {
    const target = new URL(SHARED_REDIS);
    proxy = await startFaultProxy({ host: target.hostname, port: Number(target.port || 6379) });
    dibs = await openDibs(`${SHARED_REDIS}?prefix=${prefix}`);
  });

  after(async () => {
    await dibs?.close();
    await proxy?.close();
    await deletePrefix(SHARED_REDIS, prefix);
  });

  it('3 processes, limit 3, half the claims unkeyed: every held code was acknowledged to its holder', async () => {
    await dibs.pools.create({ name: 'rs', perClaimantLimit: 3 });
    await dibs.pools.importCodes(
      'rs',
      Array.from({ length: CODES }, (_, i) => `RS-${i}`),
    );
    const faults = loseReplies(proxy);
    const outcomes = await runClaimStorm({
      store: `redis://${proxy.host}:${proxy.port}/0?prefix=${prefix}&commandTimeoutMs=10000`,
      pool: 'rs',
      processes: 3,
      claimants: 700,
      claimsPerClaimant: 3,
      concurrency: 8,
      paceMs: 5,
      timeoutMs: 120_000,
      onStart: faults.start,
    });
    const lost = await faults.stop();
    assert.ok(lost >= 3, `replies were lost ${lost} times during the storm`);
    const errors = outcomes.filter((o) => o.status === 'error' && o.error !== 'sold_out');
    assert.deepEqual(
      [...new Set(errors.map((o) => o.error))],
      [],
      'every claim in flight at a reset was re-sent and answered',
    );
    const summary = await assertStormInvariants(dibs, 'rs', outcomes, { codes: CODES, perClaimantLimit: 3 });
    assert.ok(summary.codesGiven > 0);
  });

  it('3 processes × 400 counter increments under the same faults: the counter equals the acknowledged increments', async () => {
    const faults = loseReplies(proxy);
    faults.start();
    // an increment failing as unavailable (a reconnect that met a reset) may or may not have landed
    const { done, unavailable } = await runCounterStorm({
      store: `redis://${proxy.host}:${proxy.port}/0?prefix=${prefix}&commandTimeoutMs=10000`,
      processes: 3,
      counter: 'rs-count',
      rounds: 400,
      retryUnavailable: true,
    });
    const lost = await faults.stop();
    assert.ok(lost >= 3, `replies were lost ${lost} times during the storm`);
    const { value } = await dibs.counters.get('rs-count');
    assert.equal(done + unavailable, 1_200);
    assert.ok(
      value >= done && value <= done + unavailable,
      `${done} acknowledged increments of 1 and ${unavailable} unavailable, the counter says ${value}`,
    );
  });
});
