/**
 * Carts on a tiered store (SQLite ledger + Redis fast path): the cart conformance suite (FAULTS_LONG=1), and a cart
 * that needs units the fast path holds in its grant gets them back from it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { cartConformance } from '../conformance/carts.js';
import { sharedRedisAvailable } from '../support/redis.js';
import { openTempTiered } from '../support/tiered.js';

const redis = await sharedRedisAvailable();

describe('tiered: sqlite ledger + redis fast path, carts', { skip: !redis }, () => {
  // the whole suite through a tiered store with FAULTS_LONG=1 (the ledger's own runs by default)
  if (process.env.FAULTS_LONG === '1')
    cartConformance('tiered sqlite+redis', () => openTempTiered('sqlite', { fast: { chunk: '4' } }));

  it('a cart line takes back the units granted to the fast path', async () => {
    const { dibs, cleanup } = await openTempTiered('sqlite', { fast: { chunk: '4' } });
    try {
      const at = (ms: number) => new Date(Date.now() + ms).toISOString();
      const sale = async (sku: string) =>
        (await dibs.sales.create({ sku, startsAt: at(0), endsAt: at(3_600_000), cap: 4, perCustomerLimit: 4 })).id;
      const [a, b] = [await sale('TIER-A'), await sale('TIER-B')];
      await dibs.sales.buy(a, 'first', 1); // the fast path is granted 4 units of a and sells one
      const { cart } = await dibs.sales.holdCart({
        customer: 'cart',
        lines: [
          { sale: b, quantity: 2 },
          { sale: a, quantity: 3 },
        ],
        ttlMs: 60_000,
      });
      assert.deepEqual((await dibs.sales.get(a)).stats, { sold: 1, held: 3, available: 0 });
      assert.equal((await dibs.sales.confirmCart(cart.id)).orders.length, 2);
      assert.deepEqual(await dibs.sales.audit(a), []);
    } finally {
      await cleanup();
    }
  });
});
