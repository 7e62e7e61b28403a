/**
 * Flash-sale buys per store, against the raw baseline of the Rails design's fast path: one Lua
 * script `INCRBY sold qty; if sold > cap then DECRBY; refuse` on a Redis counter (no order record,
 * no per-customer limit, no idempotency, nothing durable). In the same run:
 * dibs tiered (PostgreSQL ledger + Redis fast path), dibs tiered (SQLite ledger + Redis),
 * dibs PostgreSQL, dibs SQLite — each `sales.buy` with a per-customer limit, half of the buys keyed.
 *
 * Two workloads on one hot sale, each measured per store:
 * - last-10: BENCH_SALE_BUYS buyers for the last 10 units (nearly all refused: the flash-sale case);
 * - sell-through: as many units as buyers (every buy wins, so every buy writes a durable order).
 *
 *   npm run bench -- sales
 *   BENCH_SALE_BUYS=5000 BENCH_SALE_CONCURRENCY=16 npm run bench -- sales
 *
 * Everything runs in throw-away schemas, files and key prefixes, removed at the end.
 */
import { loadavg } from 'node:os';
import { Redis } from 'ioredis';
import { openDibs } from '../src/index.js';
import { printTable, summarise, timeOps, type RunStats } from './lib/measure.js';
import { BENCH_REDIS, onEachStore } from './lib/stores.js';

const BUYS = Number(process.env.BENCH_SALE_BUYS ?? 3000);
const CONCURRENCY = Number(process.env.BENCH_SALE_CONCURRENCY ?? 16);
const HOUR = 3_600_000;
const WARMUP = 300;

/** The Rails design's claim: INCRBY-if-below-limit, one script. → the new count, or -1 when over the cap. */
const RAW_LUA = `local sold = redis.call('INCRBY', KEYS[1], ARGV[1])
if sold > tonumber(ARGV[2]) then
  redis.call('DECRBY', KEYS[1], ARGV[1])
  return -1
end
return sold`;

interface Workload {
  name: string;
  cap: number;
}

const WORKLOADS: Workload[] = [
  { name: 'last-10', cap: 10 },
  { name: 'sell-through', cap: BUYS },
];

async function runRaw(w: Workload): Promise<RunStats> {
  const client = new Redis(BENCH_REDIS);
  const key = `bench_sales_raw_${process.pid}_${w.name}`;
  try {
    await timeOps(WARMUP, CONCURRENCY, () => client.eval(RAW_LUA, 1, `${key}:warmup`, 1, WARMUP));
    await client.del(`${key}:warmup`);
    let sold = 0;
    const run = await timeOps(BUYS, CONCURRENCY, async () => {
      if (Number(await client.eval(RAW_LUA, 1, key, 1, w.cap)) > 0) sold++;
    });
    if (sold !== w.cap) throw new Error(`raw sold ${sold} of ${w.cap}`);
    return summarise(`raw Lua INCRBY-if-below-cap (Redis only, nothing durable)`, run.latencies, run.seconds);
  } finally {
    await client.del(key);
    client.disconnect();
  }
}

async function runDibs(label: string, store: string, w: Workload): Promise<RunStats> {
  const dibs = await openDibs(store);
  try {
    // Untimed warm-up on another sale (JIT, connection pools, script cache), as for the baseline.
    const warm = await dibs.sales.create({
      sku: `WARM-${w.name}`,
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + HOUR).toISOString(),
      cap: WARMUP,
      perCustomerLimit: 1,
    });
    await timeOps(WARMUP, CONCURRENCY, (i) => dibs.sales.buy(warm.id, `warm-${i}`));
    const sale = await dibs.sales.create({
      sku: `BENCH-${w.name}`,
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + HOUR).toISOString(),
      cap: w.cap,
      perCustomerLimit: 1,
    });
    let sold = 0;
    const run = await timeOps(BUYS, CONCURRENCY, async (i) => {
      await dibs.sales.buy(sale.id, `user-${i}`, 1, i % 2 === 0 ? { idempotencyKey: `k-${i}` } : {}).then(
        () => sold++,
        (error: { code?: string }) => {
          if (error.code !== 'sold_out') throw error;
        },
      );
    });
    const audit = await dibs.sales.audit(sale.id);
    const final = (await dibs.sales.get(sale.id)).stats.sold;
    if (final !== w.cap || sold !== w.cap || audit.length)
      throw new Error(`${label}: sold ${final} (acknowledged ${sold}) of ${w.cap}, audit ${JSON.stringify(audit)}`);
    return summarise(`dibs ${label}`, run.latencies, run.seconds);
  } finally {
    await dibs.close();
  }
}

/** The store URL with a Redis fast path under its own prefix. */
function tiered(store: string, prefix: string): string {
  const fast = new URL(BENCH_REDIS);
  fast.searchParams.set('prefix', prefix);
  const url = new URL(store);
  url.searchParams.set('fastpath', fast.href);
  return url.href;
}

export async function main(): Promise<void> {
  const before = loadavg()
    .map((l) => l.toFixed(2))
    .join(' ');
  for (const w of WORKLOADS) {
    const raw = await runRaw(w);
    const rows: RunStats[] = [raw];
    await onEachStore(`sales_${w.name.replace('-', '_')}`, ['postgres', 'sqlite'], async (label, store) => {
      const prefix = `bench_sales_${process.pid}_${label}_${w.name}`;
      try {
        rows.push(await runDibs(`tiered ${label} + Redis`, tiered(store, prefix), w));
      } finally {
        const client = new Redis(BENCH_REDIS);
        const keys = await client.keys(`{${prefix}:*`);
        if (keys.length) await client.del(...keys);
        client.disconnect();
      }
    });
    await onEachStore(`sales_plain_${w.name.replace('-', '_')}`, ['postgres', 'sqlite'], async (label, store) => {
      rows.push(await runDibs(label, store, w));
    });
    printTable(
      `Flash-sale buys, ${w.name}: ${BUYS} buyers for ${w.cap} units, ${CONCURRENCY} in flight, one process`,
      rows,
      raw,
    );
  }
  console.log(
    `\nload average ${before} (before) → ${loadavg()
      .map((l) => l.toFixed(2))
      .join(' ')} (after)`,
  );
}
