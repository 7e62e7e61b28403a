/**
 * The flash-sale conformance suite, unchanged, on the shared Redis (single node, own key prefix)
 * and on a 3-master Redis Cluster started by the test.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { cartConformance } from '../conformance/carts.js';
import { redisCartTamper } from '../support/cart-tamper.js';
import { saleConformance } from '../conformance/sales.js';
import { deletePrefix, onRedisStores, sharedRedisAvailable, SHARED_REDIS, testPrefix } from '../support/redis.js';

const HOUR = 3_600_000;
const at = (ms: number) => new Date(Date.now() + ms).toISOString();

await onRedisStores(
  (label, open) => {
    saleConformance(label, open);
    cartConformance(label, open, redisCartTamper);
  },
  (url) => {
    it('a cart over sales of different groups is refused at once, naming them; a shared {tag} puts them together', async () => {
      const dibs = await openDibs(`${url()}?prefix=${testPrefix()}`);
      try {
        const sale = async (sku: string) =>
          (await dibs.sales.create({ sku, startsAt: at(0), endsAt: at(HOUR), cap: 5 })).id;
        const [a, b] = [await sale('plain-tee'), await sale('plain-mug')];
        await assert.rejects(
          dibs.sales.holdCart({
            customer: 'ann',
            lines: [
              { sale: a, quantity: 1 },
              { sale: b, quantity: 1 },
            ],
            ttlMs: 60_000,
          }),
          (error: { code?: string; field?: string; details?: { sales?: string[] } }) =>
            error.code === 'invalid_input' && error.field === 'lines' && error.details?.sales?.join() === `${a},${b}`,
        );
        assert.equal((await dibs.sales.get(a)).stats.held, 0);
        const [c, d] = [await sale('{shop}tee'), await sale('{shop}mug')];
        const { cart } = await dibs.sales.holdCart({
          customer: 'ann',
          lines: [
            { sale: c, quantity: 1 },
            { sale: d, quantity: 1 },
          ],
          ttlMs: 60_000,
        });
        assert.equal((await dibs.sales.confirmCart(cart.id)).orders.length, 2);
      } finally {
        await dibs.close();
      }
    });
  },
);

const single = await sharedRedisAvailable();

describe('redis carts: one script over several sale groups on a single node', { skip: !single }, () => {
  it('holds, confirms and cancels carts whose sales are in different groups', async () => {
    const prefix = testPrefix();
    const dibs = await openDibs(`${SHARED_REDIS}?prefix=${prefix}`);
    try {
      const sale = async (sku: string) =>
        (await dibs.sales.create({ sku, startsAt: at(0), endsAt: at(HOUR), cap: 2, perCustomerLimit: 2 })).id;
      const ids = [await sale('group-a'), await sale('group-b'), await sale('group-c')];
      const lines = ids.map((id) => ({ sale: id, quantity: 1 }));
      const first = await dibs.sales.holdCart({ customer: 'ann', lines, ttlMs: 60_000, idempotencyKey: 'ann-cart' });
      // the key is one key whatever group the cart lives in (its first line's)
      await assert.rejects(
        dibs.sales.holdCart({ customer: 'ann', lines: lines.slice(1), ttlMs: 60_000, idempotencyKey: 'ann-cart' }),
        { code: 'conflict', field: 'idempotencyKey' },
      );
      assert.equal(
        (await dibs.sales.holdCart({ customer: 'ann', lines, ttlMs: 60_000, idempotencyKey: 'ann-cart' })).cart.id,
        first.cart.id,
      );
      await dibs.sales.buy(ids[2]!, 'bob', 1);
      await assert.rejects(dibs.sales.holdCart({ customer: 'cy', lines, ttlMs: 60_000 }), {
        code: 'sold_out',
        field: 'lines.2',
      });
      for (const id of ids.slice(0, 2))
        assert.equal((await dibs.sales.get(id)).stats.held, 1, 'nothing of the refused cart is held');
      const { orders } = await dibs.sales.confirmCart(first.cart.id);
      assert.deepEqual(
        orders.map((o) => o.saleId),
        ids,
      );
      const second = await dibs.sales.holdCart({ customer: 'cy', lines: lines.slice(0, 2), ttlMs: 60_000 });
      assert.equal((await dibs.sales.cancelCart(second.cart.id)).status, 'cancelled');
      for (const id of ids) assert.deepEqual(await dibs.sales.audit(id), []);
    } finally {
      await dibs.close();
      await deletePrefix(SHARED_REDIS, prefix);
    }
  });
});

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
