/**
 * Fair locks across OS processes on Redis: waiters of 4 processes (and a waiter SIGKILLed in
 * line) are granted in the order of their tickets — the server's per-key sequence (INCR).
 */
import { it } from 'node:test';
import { runFairLockStorm } from '../support/lock-storm.js';
import { deletePrefix, sharedRedisAvailable, SHARED_REDIS, testPrefix } from '../support/redis.js';

const single = await sharedRedisAvailable();

it('redis: 4 processes, one key: fair grants in ticket order, no overlap, fences grow; a killed waiter stops blocking', {
  skip: !single,
  timeout: 600_000,
}, async () => {
  const prefix = testPrefix();
  try {
    await runFairLockStorm({ store: `${SHARED_REDIS}?prefix=${prefix}`, processes: 4, key: 'fair-storm', rounds: 5 });
  } finally {
    await deletePrefix(SHARED_REDIS, prefix);
  }
});
