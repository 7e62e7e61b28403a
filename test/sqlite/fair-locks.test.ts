/**
 * Fair locks across OS processes on one SQLite file: waiters of 4 processes (and a waiter
 * SIGKILLed in line) are granted in the order of their tickets — SQLite's own per-key sequence.
 */
import { describe, it } from 'node:test';
import { runFairLockStorm } from '../support/lock-storm.js';
import { sqliteForSuite } from '../support/sqlite.js';

describe('sqlite: fair locks across processes', () => {
  const env = sqliteForSuite();
  it('4 processes, one key: grants in ticket order, no overlap, fences grow; a killed waiter stops blocking', {
    timeout: 600_000,
  }, async () => {
    await runFairLockStorm({ store: env.store, processes: 4, key: 'fair-storm', rounds: 5 });
  });
});
