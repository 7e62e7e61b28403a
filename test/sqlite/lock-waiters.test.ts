import { describe, it } from 'node:test';
import { assertWaitersSeenByOtherInstances } from '../support/lock-waiters.js';
import { sqliteForSuite } from '../support/sqlite.js';

describe('sqlite: lock waiters', () => {
  const env = sqliteForSuite();
  it('waiters of other instances are counted by inspect (as `dibs locks inspect` shows them)', async () => {
    await assertWaitersSeenByOtherInstances(env.store);
  });
});
