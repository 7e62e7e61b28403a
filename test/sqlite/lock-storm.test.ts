import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { assertMutualExclusion, runCounterStorm, runLockStorm } from '../support/lock-storm.js';
import { tempSqliteStore } from '../support/sqlite.js';

describe('sqlite: locks across OS processes', () => {
  it('4 processes × 8 keys: per key no overlap, fences increase, different keys overlap', async () => {
    const temp = tempSqliteStore();
    try {
      const keys = Array.from({ length: 8 }, (_, i) => `key-${i}`);
      const sections = await runLockStorm({ store: temp.store, processes: 4, keys, rounds: 16, holdMs: 10 });
      assert.equal(sections.length, 64);
      assertMutualExclusion(sections, keys);
    } finally {
      temp.cleanup();
    }
  });

  it('4 processes × 100 increments: the counter is exact and its shard count grew', async () => {
    const temp = tempSqliteStore();
    try {
      // Contention is made certain, not hoped for: this process holds the write lock while the
      // workers start, so their first increments wait (well past the 2 ms that marks contention).
      await (await openDibs(temp.store)).close(); // migrations first
      const blocker = new Database(temp.store.slice('sqlite:'.length));
      blocker.exec('BEGIN IMMEDIATE');
      const release = setTimeout(() => blocker.exec('COMMIT'), 4000);
      try {
        await runCounterStorm({ store: temp.store, processes: 4, counter: 'hits', rounds: 100 });
      } finally {
        clearTimeout(release);
        if (blocker.inTransaction) blocker.exec('COMMIT');
        blocker.close();
      }
      const dibs = await openDibs(temp.store);
      try {
        const value = await dibs.counters.get('hits');
        assert.equal(value.value, 400);
        assert.ok(value.shards > 1, `shard count did not grow under contention (${value.shards})`);
      } finally {
        await dibs.close();
      }
    } finally {
      temp.cleanup();
    }
  });
});
