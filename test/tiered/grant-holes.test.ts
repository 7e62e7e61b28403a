/**
 * Tiered mode's grants against a Redis state that does not match the ledger, on both ledgers:
 * - Redis rolled back (its sale keys DUMPed, then RESTOREd after sales and a refill — what a
 *   failover to a lagging replica or an RDB restore does): the grant the ledger made meanwhile is
 *   referenced by no Redis state; it is detected and reclaimed at once, so the remaining units sell
 *   without a false sold_out, and nothing is oversold (sold = cap, audit clean).
 * - A waiting room enabled on a live sale with a grant outstanding: a buy without a ticket is
 *   refused (`ticket_required`) at once, like on the plain store, not sold from the grant.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { tieredSaleKeys } from '../../src/backends/redis/keys.js';
import { isDibsError, openDibs, type Dibs } from '../../src/index.js';
import { rejectsWith } from '../support/assert.js';
import { postgresUnreachable } from '../support/postgres.js';
import { sharedRedisAvailable } from '../support/redis.js';
import { openTempTiered, type Ledger } from '../support/tiered.js';

const HOUR = 3_600_000;
const redisUp = await sharedRedisAvailable();
const pgUp = (await postgresUnreachable()) === null;
const live = (sku: string, cap: number) => ({
  sku,
  startsAt: new Date().toISOString(),
  endsAt: new Date(Date.now() + HOUR).toISOString(),
  cap,
  perCustomerLimit: 1,
});

/** The sale's fast-path keys as DUMPed now; `restore` puts exactly that back (absent keys deleted). */
async function snapshot(redisUrl: string, prefix: string, sale: string): Promise<{ restore(): Promise<void> }> {
  const keys = Object.values(tieredSaleKeys(prefix, sale));
  const client = new Redis(redisUrl);
  try {
    const dumps = await Promise.all(
      keys.map(async (key) => ({ key, dump: await client.dumpBuffer(key), ttl: await client.pttl(key) })),
    );
    return {
      restore: async () => {
        const again = new Redis(redisUrl);
        try {
          for (const { key, dump, ttl } of dumps) {
            if (dump === null) await again.del(key);
            else await again.restore(key, Math.max(ttl, 0), dump, 'REPLACE');
          }
        } finally {
          again.disconnect();
        }
      },
    };
  } finally {
    client.disconnect();
  }
}

/** Buys one unit for each customer, in order; returns what each got (`ok` or the error code). */
async function buyAll(dibs: Dibs, sale: string, customers: string[]): Promise<string[]> {
  const answers: string[] = [];
  for (const customer of customers) {
    try {
      await dibs.sales.buy(sale, customer);
      answers.push('ok');
    } catch (error) {
      if (!isDibsError(error)) throw error;
      answers.push(error.code);
    }
  }
  return answers;
}

const ledgers: Ledger[] = ['sqlite', 'postgres'];

for (const ledger of ledgers) {
  describe(`tiered (${ledger} ledger): Redis state behind the ledger`, {
    skip: !redisUp || (ledger === 'postgres' && !pgUp),
  }, () => {
    // The grants live far longer than the test: only detection can free an orphaned one.
    const fast = { chunk: '4', grantTtlMs: '600000' };

    it('Redis rolled back to before a refill (its grant still had units): the rest sells at once', async () => {
      const t = await openTempTiered(ledger, { fast });
      try {
        const sale = await t.dibs.sales.create(live('ROLLBACK-1', 8));
        assert.deepEqual(await buyAll(t.dibs, sale.id, ['c0']), ['ok']); // grant 1 (4 units), 3 left in Redis
        const before = await snapshot(t.redis, t.prefix, sale.id);
        assert.deepEqual(await buyAll(t.dibs, sale.id, ['c1', 'c2', 'c3', 'c4']), ['ok', 'ok', 'ok', 'ok']); // grant 1 used up; grant 2 (4 units), 1 sold
        await before.restore(); // Redis believes grant 1 still has 3 units; the ledger's grant 2 holds 3
        assert.deepEqual(
          await buyAll(t.dibs, sale.id, ['c5', 'c6', 'c7']),
          ['ok', 'ok', 'ok'],
          'no sold_out while units remain',
        );
        assert.deepEqual(await buyAll(t.dibs, sale.id, ['c8']), ['sold_out']);
        const { stats } = await t.dibs.sales.get(sale.id);
        assert.equal(stats.sold, 8);
        assert.deepEqual(await t.dibs.sales.audit(sale.id), []);
      } finally {
        await t.cleanup();
      }
    });

    it('Redis rolled back to its used-up grant: the refill finds the orphaned grant and reclaims it', async () => {
      const t = await openTempTiered(ledger, { fast });
      try {
        const sale = await t.dibs.sales.create(live('ROLLBACK-2', 8));
        assert.deepEqual(await buyAll(t.dibs, sale.id, ['c0', 'c1', 'c2', 'c3']), ['ok', 'ok', 'ok', 'ok']); // grant 1 used up, still current
        const before = await snapshot(t.redis, t.prefix, sale.id);
        assert.deepEqual(await buyAll(t.dibs, sale.id, ['c4']), ['ok']); // grant 2 (4 units), 1 sold
        await before.restore(); // Redis: grant 1 with nothing left, asks for a refill; the ledger's grant 2 holds 3
        assert.deepEqual(
          await buyAll(t.dibs, sale.id, ['c5', 'c6', 'c7']),
          ['ok', 'ok', 'ok'],
          'no sold_out while units remain',
        );
        assert.deepEqual(await buyAll(t.dibs, sale.id, ['c8']), ['sold_out']);
        assert.equal((await t.dibs.sales.get(sale.id)).stats.sold, 8);
        assert.deepEqual(await t.dibs.sales.audit(sale.id), []);
      } finally {
        await t.cleanup();
      }
    });

    // Through the tiered store (which also takes the grants back), and through the ledger's URL
    // alone — an operator's CLI without the fast path: Redis keeps its grant, the ledger refuses.
    for (const via of ['the tiered store', 'the ledger alone']) {
      it(`a waiting room enabled (through ${via}) on a live sale with a grant outstanding: buys without a ticket are refused at once`, async () => {
        const t = await openTempTiered(ledger);
        const ledgerUrl = new URL(t.store);
        ledgerUrl.searchParams.delete('fastpath');
        const operator = via === 'the tiered store' ? t.dibs : await openDibs(ledgerUrl.href);
        try {
          const sale = await t.dibs.sales.create(live('ROOM-LATE', 40));
          assert.deepEqual(await buyAll(t.dibs, sale.id, ['early']), ['ok']); // a grant of 32 is now in Redis
          await operator.waitingRooms.enable(sale.id, { admitPerSecond: 10, windowMs: 60_000 });
          await rejectsWith(t.dibs.sales.buy(sale.id, 'late-1'), 'ticket_required');
          await rejectsWith(t.dibs.sales.buy(sale.id, 'late-2', 1, { idempotencyKey: 'late-2/1' }), 'ticket_required');
          await rejectsWith(t.dibs.sales.buy(sale.id, 'late-3'), 'ticket_required');
          assert.equal((await t.dibs.sales.get(sale.id)).stats.sold, 1);
          assert.deepEqual(await t.dibs.sales.audit(sale.id), []);
        } finally {
          if (operator !== t.dibs) await operator.close();
          await t.cleanup();
        }
      });
    }
  });
}
