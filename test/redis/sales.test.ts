/**
 * The flash-sale conformance suite, unchanged, on the shared Redis (single node, own key prefix)
 * and on a 3-master Redis Cluster started by the test.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { cartConformance } from '../conformance/carts.js';
import { saleConformance } from '../conformance/sales.js';
import { deletePrefix, onRedisStores, sharedRedisAvailable, SHARED_REDIS, testPrefix } from '../support/redis.js';

await onRedisStores(saleConformance);
await onRedisStores(cartConformance);

const single = await sharedRedisAvailable();

describe('redis sales: ids across SKU groups', { skip: !single }, () => {
  it('an id refused by the preflight stays free for another SKU; a taken id is taken across SKUs', async () => {
    const prefix = testPrefix();
    const dibs = await openDibs(`${SHARED_REDIS}?prefix=${prefix}`);
    try {
      const hour = 3_600_000;
      const at = (ms: number) => new Date(Date.now() + ms).toISOString();
      await assert.rejects(
        dibs.sales.create({ id: 'launch', sku: 'SKU-A', startsAt: at(hour), endsAt: at(hour / 2), cap: 1 }),
        { code: 'invalid_input' },
      );
      const sale = await dibs.sales.create({
        id: 'launch',
        sku: 'SKU-B-other-group',
        startsAt: at(0),
        endsAt: at(hour),
        cap: 1,
      });
      assert.equal(sale.sku, 'SKU-B-other-group');
      await assert.rejects(
        dibs.sales.create({ id: 'launch', sku: 'SKU-A', startsAt: at(0), endsAt: at(hour), cap: 1 }),
        { code: 'already_exists' },
      );
      // the hold id names the sale's group: confirm finds it without any index
      const { hold } = await dibs.sales.reserve('launch', 'ann', 1, 60_000);
      assert.match(hold.id, /^hold_[0-9a-f]{28}$/);
      assert.equal((await dibs.sales.confirm(hold.id)).order.saleId, 'launch');
      assert.deepEqual(
        (await dibs.sales.list()).items.map((s) => s.id),
        ['launch'],
      );
    } finally {
      await dibs.close();
      await deletePrefix(SHARED_REDIS, prefix);
    }
  });
});
