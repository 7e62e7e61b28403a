/**
 * Flash-sale buys on Redis: the raw baseline (one minimal Lua script: `sold < cap` → increment and
 * record the order — no per-customer limit, no idempotency, no holds, no events) vs dibs
 * `sales.buy` (sale_buy.lua: key, lazy hold expiry, window, limit, cap, order, counters, sold-out
 * event), in one run, on one hot sale, over one connection each. Then the refusals after the
 * sell-out, and hold + confirm.
 *
 *   npm run bench -- sales-redis
 *   BENCH_SALE_BUYS=5000 BENCH_SALE_CONCURRENCY=16 npm run bench -- sales-redis
 *
 * Keys live under a throw-away prefix that is deleted at the end.
 */
import { Redis } from 'ioredis';
import { openDibs, type Dibs } from '../src/index.js';
import { newId } from '../src/core/ids.js';
import { saleGroupOf, saleKey, saleTag } from '../src/backends/redis/keys.js';
import { runScript } from '../src/backends/redis/scripts.js';
import { printTable, summarise, timeOps, type RunStats } from './lib/measure.js';

const URL_BASE = process.env.BENCH_REDIS_URL ?? process.env.DIBS_TEST_REDIS ?? 'redis://127.0.0.1:6379/0';
const BUYS = Number(process.env.BENCH_SALE_BUYS ?? 5000);
const CONCURRENCY = Number(process.env.BENCH_SALE_CONCURRENCY ?? 16);
const HOUR = 3_600_000;

const RAW_BUY = `
local sold = tonumber(redis.call('HGET', KEYS[1], 'sold'))
if sold >= tonumber(redis.call('HGET', KEYS[1], 'cap')) then return 0 end
redis.call('HSET', KEYS[1], 'sold', sold + 1)
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2])
return 1`;

async function runRaw(redis: Redis, prefix: string): Promise<RunStats> {
  const sale = `{${prefix}:raw}:sale`;
  const orders = `{${prefix}:raw}:orders`;
  await redis.hset(sale, 'cap', BUYS, 'sold', 0);
  redis.defineCommand('rawBuy', { numberOfKeys: 2, lua: RAW_BUY });
  let sold = 0;
  const run = await timeOps(BUYS, CONCURRENCY, async (i) => {
    const took = Number(
      await (redis as unknown as { rawBuy(...args: string[]): Promise<number> }).rawBuy(
        sale,
        orders,
        `ord-${i}`,
        `user-${i}`,
      ),
    );
    sold += took;
  });
  if (sold !== BUYS) throw new Error(`raw sold ${sold} of ${BUYS}`);
  return summarise(`raw Lua conditional increment + order, ${CONCURRENCY} in flight`, run.latencies, run.seconds);
}

async function newSale(dibs: Dibs, sku: string, cap: number) {
  return dibs.sales.create({
    sku,
    startsAt: new Date().toISOString(),
    endsAt: new Date(Date.now() + HOUR).toISOString(),
    cap,
    perCustomerLimit: 1,
  });
}

async function runDibs(redis: Redis, prefix: string): Promise<RunStats[]> {
  const dibs = await openDibs(`${URL_BASE}?prefix=${prefix}`);
  try {
    // dibs' own sale_buy.lua called directly (no library around it): what the rules cost in Redis.
    const direct = await newSale(dibs, 'BENCH-DIRECT', BUYS);
    const tag = saleTag(prefix, saleGroupOf('BENCH-DIRECT'));
    const scripted = await timeOps(BUYS, CONCURRENCY, async (i) => {
      const [status] = (await runScript(
        redis,
        'sale_buy',
        [saleKey(tag, 'sale', direct.id)],
        [tag, direct.id, `user-${i}`, 1, i % 2 === 0 ? `k-${i}` : '', newId('ord')],
      )) as string[];
      if (status !== 'ok') throw new Error(`sale_buy.lua answered ${status}`);
    });
    const sale = await newSale(dibs, 'BENCH-BUY', BUYS);
    const buys = await timeOps(BUYS, CONCURRENCY, (i) =>
      dibs.sales.buy(sale.id, `user-${i}`, 1, i % 2 === 0 ? { idempotencyKey: `k-${i}` } : {}),
    );
    const audit = await dibs.sales.audit(sale.id);
    if ((await dibs.sales.get(sale.id)).stats.sold !== BUYS || audit.length)
      throw new Error(`dibs sold wrong or audit failed: ${JSON.stringify(audit)}`);
    const refusals = await timeOps(BUYS, CONCURRENCY, async (i) => {
      await dibs.sales.buy(sale.id, `late-${i}`).then(
        () => {
          throw new Error('sold past the cap');
        },
        (error: { code?: string }) => {
          if (error.code !== 'sold_out') throw error;
        },
      );
    });
    const holdSale = await newSale(dibs, 'BENCH-HOLD', BUYS);
    const holds = await timeOps(BUYS, CONCURRENCY, async (i) => {
      const { hold } = await dibs.sales.reserve(holdSale.id, `user-${i}`, 1, 60_000);
      await dibs.sales.confirm(hold.id);
    });
    if ((await dibs.sales.audit(holdSale.id)).length) throw new Error('hold audit failed');
    return [
      summarise(
        `raw EVALSHA of dibs' sale_buy.lua (half keyed), ${CONCURRENCY} in flight`,
        scripted.latencies,
        scripted.seconds,
      ),
      summarise(`dibs sales.buy (half keyed), ${CONCURRENCY} in flight`, buys.latencies, buys.seconds),
      summarise('dibs sales.buy after the sell-out (sold_out answers)', refusals.latencies, refusals.seconds),
      summarise('dibs reserve + confirm (2 steps per op)', holds.latencies, holds.seconds),
    ];
  } finally {
    await dibs.close();
  }
}

async function deletePrefix(redis: Redis, prefix: string): Promise<void> {
  for (const pattern of [`{${prefix}:*`, `{${prefix}}*`]) {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  }
}

export async function main(): Promise<void> {
  const prefix = `bench-sale-${process.pid}-${Date.now().toString(36)}`;
  const redis = new Redis(URL_BASE);
  try {
    const raw = await runRaw(redis, prefix);
    const rows = await runDibs(redis, prefix);
    printTable(`Redis flash-sale buys on one hot sale (${BUYS} ops per run)`, [raw, ...rows], raw);
  } finally {
    await deletePrefix(redis, prefix);
    redis.disconnect();
  }
}
