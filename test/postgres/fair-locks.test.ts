/**
 * Fair locks across OS processes on PostgreSQL: waiters of 4 processes (and a waiter SIGKILLed in
 * line) are granted in the order of their tickets — the server's per-key sequence.
 */
import { it } from 'node:test';
import { runFairLockStorm } from '../support/lock-storm.js';
import { requirePostgres, tempPgStore } from '../support/postgres.js';

const skip = await requirePostgres();

it('postgres: 4 processes, one key: fair grants in ticket order, no overlap, fences grow; a killed waiter stops blocking', {
  skip,
  timeout: 600_000,
}, async () => {
  const temp = tempPgStore({ poolSize: '2' });
  try {
    await runFairLockStorm({ store: temp.store, processes: 4, key: 'fair-storm', rounds: 5 });
  } finally {
    await temp.drop();
  }
});
