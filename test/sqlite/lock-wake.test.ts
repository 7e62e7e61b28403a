/**
 * SQLite wake-ups across processes: a release by another process (here another backend on the
 * same file — the same mechanism, a wake file beside the database) calls this instance's release
 * listeners, so a waiter does not sit out the safety-net poll. No timing assert: the listener must
 * be called at all (bounded retries, only to fail instead of hang).
 */
import { describe, it } from 'node:test';
import { assertReleaseWakesOtherInstance } from '../support/wake.js';
import { sqliteForSuite } from '../support/sqlite.js';

describe('sqlite: lock wake-ups', () => {
  const env = sqliteForSuite();
  it('a release in one instance wakes the waiters of another (wake file)', async () => {
    await assertReleaseWakesOtherInstance(env.store);
  });
});
