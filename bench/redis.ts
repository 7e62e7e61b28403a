/**
 * Redis, same server, same concurrency, same run:
 * - a raw ioredis EVALSHA loop of a minimal claim (ZPOPMIN + HSET holder): the floor;
 * - a raw ioredis EVALSHA loop of dibs' own claim.lua (equivalent work, no library around it);
 * - dibs `pools.claim` (validation, error mapping, result shaping around that same script).
 * dibs vs the equivalent script is the cost of the library; vs the minimal one, the cost of the
 * rules (idempotency, limit, holder both ways, counters, low-stock edge). 1 process, then 4.
 */
import { Redis } from 'ioredis';
import { openDibs } from '../src/index.js';
import { fanOut, printTable, summarise, timeOps, type RunStats } from './lib/measure.js';
import { seedDibs } from './lib/seed.js';
import { poolKeys } from '../src/backends/redis/keys.js';
import { runScript } from '../src/backends/redis/scripts.js';

const REDIS_URL = process.env.BENCH_REDIS ?? 'redis://127.0.0.1:6379/0';
const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 40_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 32);
const PROCESSES = Number(process.env.BENCH_PROCESSES ?? 4);
const WORKER = new URL('./redis-worker.ts', import.meta.url);

export const RAW_SCRIPT = `
local code = redis.call('ZPOPMIN', KEYS[1])
if #code == 0 then return false end
redis.call('HSET', KEYS[2], code[1], ARGV[1])
return code[1]`;

export async function seedRaw(client: Redis, prefix: string, n: number): Promise<void> {
  for (let i = 0; i < n; i += 5000) {
    const args: (string | number)[] = [];
    for (let j = i; j < Math.min(n, i + 5000); j++) args.push(j, `RAW-${j}`);
    await client.zadd(`{${prefix}}:free`, ...args);
  }
}

async function cleanup(client: Redis, prefix: string): Promise<void> {
  let cursor = '0';
  do {
    const [next, keys] = await client.scan(cursor, 'MATCH', `{${prefix}*`, 'COUNT', 1000);
    cursor = next;
    if (keys.length) await client.del(...keys);
  } while (cursor !== '0');
}

export async function main(): Promise<void> {
  const prefix = `bench_${Date.now().toString(36)}`;
  const client = new Redis(REDIS_URL);
  try {
    const sha = (await client.script('LOAD', RAW_SCRIPT)) as string;
    await seedRaw(client, `${prefix}-raw`, CLAIMS);
    const raw = await timeOps(CLAIMS, CONCURRENCY, (i) =>
      client.evalsha(sha, 2, `{${prefix}-raw}:free`, `{${prefix}-raw}:holders`, `user-${i}`),
    );
    const baseline = summarise(`raw EVALSHA, 1 process, ${CONCURRENCY} in flight`, raw.latencies, raw.seconds);

    await seedDibs(`${REDIS_URL}?prefix=${prefix}-eq`, CLAIMS);
    const k = poolKeys(`${prefix}-eq`, 'bench');
    const keys = [k.pool, k.free, k.codes, k.held, k.claimKeys, k.events, k.parked, k.claimed];
    const eq = await timeOps(CLAIMS, CONCURRENCY, (i) => runScript(client, 'claim', keys, [`user-${i}`, 1, '']));
    const equivalent = summarise(
      `raw EVALSHA of dibs' claim.lua, 1 process, ${CONCURRENCY} in flight`,
      eq.latencies,
      eq.seconds,
    );

    const store = `${REDIS_URL}?prefix=${prefix}-dibs`;
    await seedDibs(store, CLAIMS);
    const dibs = await openDibs(store);
    const run = await timeOps(CLAIMS, CONCURRENCY, (i) => dibs.pools.claim('bench', `user-${i}`));
    await dibs.close();
    const one = summarise(`dibs claim, 1 process, ${CONCURRENCY} in flight`, run.latencies, run.seconds);

    await seedRaw(client, `${prefix}-rawm`, CLAIMS);
    const rawMulti = await fanOut(`raw EVALSHA, ${PROCESSES} processes`, WORKER, PROCESSES, (i) => [
      'raw',
      REDIS_URL,
      `${prefix}-rawm`,
      String(CLAIMS / PROCESSES),
      String(CONCURRENCY),
      `p${i}`,
    ]);
    const storeMulti = `${REDIS_URL}?prefix=${prefix}-dibsm`;
    await seedDibs(storeMulti, CLAIMS);
    const dibsMulti = await fanOut(`dibs claim, ${PROCESSES} processes`, WORKER, PROCESSES, (i) => [
      'dibs',
      storeMulti,
      'bench',
      String(CLAIMS / PROCESSES),
      String(CONCURRENCY),
      `p${i}`,
    ]);

    const rows: RunStats[] = [baseline, equivalent, one, rawMulti, dibsMulti];
    printTable(`Redis claims (${CLAIMS} per run, ${REDIS_URL}; ratio vs raw 1 process)`, rows, baseline);
    console.log(
      `\nratio dibs / raw equivalent script, 1 process: ${(one.perSecond / equivalent.perSecond).toFixed(2)}×`,
    );
    console.log(
      `ratio dibs / raw minimal script: 1 process ${(one.perSecond / baseline.perSecond).toFixed(2)}×, ${PROCESSES} processes ${(dibsMulti.perSecond / rawMulti.perSecond).toFixed(2)}×`,
    );
  } finally {
    await cleanup(client, prefix);
    client.disconnect();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
