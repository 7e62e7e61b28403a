/**
 * Tiered mode (PostgreSQL ledger): a fast-path win the ledger refuses is given back while another
 * caller holds the refill lease. The refill replaces Redis' `left` with the next grant's size, so a
 * unit given back to `left` meanwhile was overwritten and stayed in the old grant's escrow, unsold,
 * until the grant expired (the tiered 1,000-buyer storm ended with sold 9, escrow 1 on a grant of
 * size 4, used 3). Such a unit goes back to the ledger instead and sells.
 *
 * The interleaving is made, not waited for: a transaction holds the sale row while the first buyer
 * (decided in Redis) and the refill (leased in Redis) queue behind it, in that order.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import pg from 'pg';
import { Redis } from 'ioredis';
import { tieredSaleKeys } from '../../src/backends/redis/keys.js';
import { postgresUnreachable, TEST_PG } from '../support/postgres.js';
import { sharedRedisAvailable } from '../support/redis.js';
import { openTempTiered } from '../support/tiered.js';

const HOUR = 3_600_000;
const ready = (await sharedRedisAvailable()) && (await postgresUnreachable()) === null;

async function until(what: string, check: () => Promise<boolean>): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (await check()) return;
    await sleep(10);
  }
  throw new Error(`timed out waiting for ${what}`);
}

const outcome = (p: Promise<{ order: { id: string } }>) =>
  p.then(
    () => 'ok',
    (error: { code?: string }) => String(error.code),
  );

describe('tiered (postgres ledger): a win given back during a refill', { skip: !ready }, () => {
  it('the unit goes back to the ledger and sells, not lost to the refill', async () => {
    const t = await openTempTiered('postgres', { fast: { chunk: '2', grantTtlMs: '600000', recheckMs: '100' } });
    const redis = new Redis(t.redis);
    const admin = new pg.Client({ connectionString: TEST_PG });
    await admin.connect();
    try {
      const schema = new URL(t.store).searchParams.get('schema')!;
      const sale = await t.dibs.sales.create({
        sku: 'REFILL-GIVE',
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + HOUR).toISOString(),
        cap: 3,
        perCustomerLimit: 1,
      });
      await t.dibs.sales.buy(sale.id, 'first'); // grant 1 (2 units): 1 left in Redis
      await t.dibs.sales.reserve(sale.id, 'a', 1, HOUR); // the ledger's third unit, held by a (Redis does not count holds)
      const k = tieredSaleKeys(t.prefix, sale.id);
      await admin.query('BEGIN');
      await admin.query(`SELECT 1 FROM ${schema}.sales WHERE id = $1 FOR UPDATE`, [sale.id]);
      // a wins grant 1's last unit in Redis; its ledger write waits for the row (and will be refused: a's hold).
      const a = outcome(t.dibs.sales.buy(sale.id, 'a'));
      await until('a decided in Redis', async () => (await redis.hget(k.state, 'left')) === '0');
      // b finds grant 1 empty and takes the refill lease; its refill waits for the row behind a.
      const b = outcome(t.dibs.sales.buy(sale.id, 'b'));
      await until('b leased the refill', async () => Number(await redis.hget(k.state, 'refill_until')) > 0);
      await admin.query('ROLLBACK');
      assert.equal(await a, 'limit_reached');
      const bOutcome = await b;
      await sleep(200); // past a sold-out answer the refill may have installed (recheckMs)
      const c = await outcome(t.dibs.sales.buy(sale.id, 'c'));
      const final = await t.dibs.sales.get(sale.id);
      assert.equal(final.stats.sold, 2, `the unit a gave back sells (b: ${bOutcome}, c: ${c})`);
      assert.deepEqual([bOutcome, c].sort(), ['ok', 'sold_out']);
      assert.deepEqual(await t.dibs.sales.audit(sale.id), []);
    } finally {
      await admin.end();
      redis.disconnect();
      await t.cleanup();
    }
  });
});
