/** The outbox delivery conformance suite, unchanged, on the shared Redis and on a test-owned Cluster. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDibs } from '../../src/index.js';
import { outboxConformance } from '../conformance/outbox.js';
import { deletePrefix, onRedisStores, sharedRedisAvailable, SHARED_REDIS, testPrefix } from '../support/redis.js';

await onRedisStores(outboxConformance);

const single = await sharedRedisAvailable();

describe('redis outbox: events of many streams', { skip: !single }, () => {
  it('leases pool and sale events of every stream oldest first, ids naming their stream', async () => {
    const prefix = testPrefix();
    const dibs = await openDibs(`${SHARED_REDIS}?prefix=${prefix}`);
    try {
      const outbox = dibs.backend.outbox;
      await dibs.pools.create({ name: 'ob-pool', lowStockThreshold: 1 });
      await dibs.pools.importCodes('ob-pool', ['A', 'B']);
      for (let i = 0; i < 12; i++) await dibs.sales.wish('OB-A', `fan-${i}`, { webhook: `http://127.0.0.1:9/${i}` });
      await dibs.sales.create({
        id: 'ob-a',
        sku: 'OB-A',
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap: 1,
      });
      await dibs.sales.activateDue(); // 13 events in one millisecond of one stream
      // Streams are merged by their ids' milliseconds: events of two streams in the same one have
      // no order between them, so each stream's events here start in a later millisecond.
      await sleep(2);
      await dibs.pools.claim('ob-pool', 'someone'); // pool.low_stock
      await sleep(2);
      await dibs.sales.create({
        id: 'ob-b',
        sku: 'OB-B',
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap: 1,
      });
      await dibs.sales.buy('ob-b', 'zed'); // sale.sold_out
      const leased = [...(await outbox.claimDue(5, 60_000)), ...(await outbox.claimDue(100, 60_000))];
      assert.equal(leased.length, 15);
      assert.deepEqual(
        leased.map((e) => e.type),
        ['sale.live', ...Array(12).fill('sale.live.notify'), 'pool.low_stock', 'sale.sold_out'],
      );
      assert.deepEqual(
        leased.slice(1, 13).map((e) => e.payload.customer),
        Array.from({ length: 12 }, (_, i) => `fan-${i}`).sort(),
        'stream order within one millisecond',
      );
      assert.ok(
        leased.slice(0, 13).every((e) => e.id.startsWith('s~ob-a~')) &&
          leased[13]!.id.startsWith('p~ob-pool~') &&
          leased[14]!.id.startsWith('s~ob-b~'),
      );
      assert.deepEqual(
        (await dibs.sales.events({ sale: 'ob-b' })).map((e) => e.id),
        [leased[14]!.id],
        'sale events are listed under their outbox id',
      );
      await outbox.markDelivered(leased[13]!.id, 'HTTP 200');
      assert.deepEqual(
        (await outbox.deliveries(leased[13]!.id)).map((d) => d.ok),
        [true],
      );
      assert.deepEqual(await outbox.deliveries('s~no-such-sale~1-0'), []);
      assert.deepEqual(
        { ...(await outbox.status()), oldestPendingMs: 0 },
        { pending: 14, delivered: 1, dead: 0, oldestPendingMs: 0 },
      );
    } finally {
      await dibs.close();
      await deletePrefix(SHARED_REDIS, prefix);
    }
  });
});
