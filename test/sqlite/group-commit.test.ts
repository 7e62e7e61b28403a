/**
 * Group commit on SQLite: writes issued together share one transaction, each in its own
 * savepoint. A failing write must not undo or block the others, and whatever was acknowledged
 * must be visible to another connection (i.e. committed) the moment the promise resolves.
 */
import assert from 'node:assert/strict';
import { after, describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { tempSqliteStore } from '../support/sqlite.js';

describe('sqlite: group commit', () => {
  const temp = tempSqliteStore();
  after(() => temp.cleanup());

  it('a batch of mixed writes: failures stay isolated, every success is committed when answered', async () => {
    const writer = await openDibs(temp.store);
    const reader = await openDibs(temp.store);
    try {
      await writer.pools.create({ name: 'gc', perClaimantLimit: 1 });
      await writer.pools.importCodes(
        'gc',
        Array.from({ length: 100 }, (_, i) => `C${i}`),
      );
      // One turn of the event loop: these all queue behind one lock acquisition.
      const calls = Array.from({ length: 150 }, (_, i) => {
        if (i % 5 === 0)
          return writer.pools.claim('no-such-pool', `u${i}`).then(
            () => 'ok',
            (e: { code?: string }) => e.code,
          );
        if (i % 7 === 0)
          return writer.pools.create({ name: 'gc' }).then(
            () => 'ok',
            (e: { code?: string }) => e.code,
          );
        return writer.pools.claim('gc', `u${i}`).then(
          async (r) => {
            // Acknowledged ⇒ committed: a different connection already sees the holding.
            const seen = await reader.pools.holdings('gc', `u${i}`);
            assert.deepEqual(
              seen.map((c) => c.code),
              [r.code],
              `u${i}'s acknowledged claim is visible to another connection`,
            );
            return 'ok';
          },
          (e: { code?: string }) => e.code,
        );
      });
      const results = await Promise.all(calls);
      const count = (what: string) => results.filter((r) => r === what).length;
      assert.equal(count('not_found'), 30);
      assert.equal(count('already_exists'), 17);
      assert.equal(count('ok') + count('sold_out'), 103);
      assert.equal(count('ok'), 100);
      assert.deepEqual(await reader.pools.audit('gc'), []);
      assert.deepEqual((await reader.pools.stats('gc')).claimed, 100);
    } finally {
      await writer.close();
      await reader.close();
    }
  });
});
