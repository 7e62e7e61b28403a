import { describe, it } from 'node:test';
import Database from 'better-sqlite3';
import { lockConformance } from '../conformance/locks.js';
import { assertFencesGrowAcrossLostHistory, assertFencesGrowPastTheClock } from '../support/fence-history.js';
import { assertBlockedLoopFiresSignalFirst } from '../support/lost-lease-timing.js';
import { openTempSqlite, tempSqliteStore } from '../support/sqlite.js';

lockConformance('sqlite (file)', openTempSqlite);

describe('sqlite: lock history lost (a file rolled back after a power loss with synchronous=normal)', () => {
  it("fences still grow: the next holder gets a higher fence and the old holder's write is refused", async () => {
    const temp = tempSqliteStore();
    try {
      await assertFencesGrowAcrossLostHistory(temp.store, {
        async forget(keys) {
          // The rows as they were before the lost commits: no lease, no fence of these keys.
          const db = new Database(temp.store.slice('sqlite:'.length));
          try {
            for (const key of keys) {
              db.prepare('DELETE FROM dibs_lock_holders WHERE key = ?').run(key);
              db.prepare('DELETE FROM dibs_lock_fences WHERE key = ?').run(key);
            }
          } finally {
            db.close();
          }
        },
      });
    } finally {
      temp.cleanup();
    }
  });

  it('a last fence ahead of the clock (the clock stepped back) is continued, never restarted', async () => {
    const temp = tempSqliteStore();
    try {
      await assertFencesGrowPastTheClock(temp.store, async (key, fence) => {
        const db = new Database(temp.store.slice('sqlite:'.length));
        try {
          db.prepare('UPDATE dibs_lock_fences SET fence = ? WHERE key = ?').run(fence, key);
        } finally {
          db.close();
        }
      });
    } finally {
      temp.cleanup();
    }
  });
});

describe('sqlite: runExclusive with a blocked event loop', () => {
  it('the loop blocked for 60% of the TTL after the grant — the holder renews in time, never overlapping the next one', async () => {
    const temp = tempSqliteStore();
    try {
      await assertBlockedLoopFiresSignalFirst(temp.store);
    } finally {
      temp.cleanup();
    }
  });
});
