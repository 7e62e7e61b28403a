/**
 * Tiered mode, on both ledgers: a keyed retry that arrives while the first request's fast-path win
 * is decided in Redis but not yet written to the ledger (its process is slow: a loaded machine).
 * The retry writes that same win (its order id, its grant) instead of selling a second unit from
 * the ledger. Selling a second unit made the first request, once its write came, find the key
 * taken and give its unit back — after the other buyers had been told sold_out, so the sale
 * stopped one short of its cap (the tiered 1,000-buyer storm sold 9 of 10).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { tieredSaleKeys } from '../../src/backends/redis/keys.js';
import { loadScripts, runScript } from '../../src/backends/redis/scripts.js';
import { postgresUnreachable } from '../support/postgres.js';
import { sharedRedisAvailable } from '../support/redis.js';
import { openTempTiered, type Ledger } from '../support/tiered.js';

const HOUR = 3_600_000;
const redisUp = await sharedRedisAvailable();
const pgUp = (await postgresUnreachable()) === null;
const SCRIPTS = loadScripts(new URL('../../src/backends/tiered/scripts/', import.meta.url), ['tiered_take']);

for (const ledger of ['sqlite', 'postgres'] as Ledger[]) {
  describe(`tiered (${ledger} ledger): a retry while the first request's win is not yet written`, {
    skip: !redisUp || (ledger === 'postgres' && !pgUp),
  }, () => {
    it('the retry gets the first request’s order from the same unit; the last unit still sells', async () => {
      const t = await openTempTiered(ledger, { fast: { chunk: '2', grantTtlMs: '600000' } });
      const redis = new Redis(t.redis);
      try {
        const sale = await t.dibs.sales.create({
          sku: 'RETRY-PENDING',
          startsAt: new Date().toISOString(),
          endsAt: new Date(Date.now() + HOUR).toISOString(),
          cap: 3,
          perCustomerLimit: 1,
        });
        await t.dibs.sales.buy(sale.id, 'first'); // grant 1 (2 units), 1 left in Redis
        // The first request of customer c, decided by Redis exactly as a buying process does; that
        // process has not written the order to the ledger yet.
        const k = tieredSaleKeys(t.prefix, sale.id);
        const decided = (await runScript(
          redis,
          SCRIPTS.tiered_take,
          [k.state, k.customers, k.keys],
          ['c', 1, 'c/checkout', 'ord_pending', 1000],
        )) as string[];
        assert.equal(decided[0], 'ok');
        const retry = await t.dibs.sales.buy(sale.id, 'c', 1, { idempotencyKey: 'c/checkout' });
        assert.equal(retry.order.id, 'ord_pending', 'the retry is answered with the first request’s order');
        assert.equal(retry.replayed, true);
        // The unit the first request won is the one sold: the third unit is still there for a buyer.
        const last = await t.dibs.sales.buy(sale.id, 'last').then(
          (r) => r.order.customer,
          (error: { code?: string }) => String(error.code),
        );
        assert.equal(last, 'last', 'the last unit sells (not sold_out while a unit is left)');
        const final = await t.dibs.sales.get(sale.id);
        assert.equal(final.stats.sold, 3);
        assert.equal(final.status, 'sold_out');
        assert.deepEqual(await t.dibs.sales.audit(sale.id), []);
      } finally {
        redis.disconnect();
        await t.cleanup();
      }
    });
  });
}
