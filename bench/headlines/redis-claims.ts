/**
 * Headline: dibs' Redis claim (`pools.claim`, 1 process, 32 in flight) vs the minimal claim script
 * (ZPOPMIN + HSET, bench/redis.ts) as interleaved rounds on fresh key prefixes. Throughput
 * ratio: the shared Redis serves other clients too, so its INFO commandstats are not this run's alone.
 */
import { Redis } from 'ioredis';
import { openDibs } from '../../src/index.js';
import { summarise, timeOps } from '../lib/measure.js';
import { interleave, loadNow, perSecond, ratio, type Ratio } from '../lib/rounds.js';
import { seedDibs } from '../lib/seed.js';
import { RAW_SCRIPT, seedRaw } from '../redis.js';
import type { Sizes } from './sizes.js';

const REDIS_URL = process.env.BENCH_REDIS ?? 'redis://127.0.0.1:6379/0';
const CONCURRENCY = 32;

export async function redisClaims(sizes: Sizes): Promise<Ratio[]> {
  const prefix = `bench_sum_${process.pid}_${Date.now().toString(36)}`;
  const client = new Redis(REDIS_URL);
  try {
    const sha = (await client.script('LOAD', RAW_SCRIPT)) as string;
    let n = 0;
    const load = loadNow();
    const [raw, dibs] = await interleave(sizes.rounds, [
      {
        label: 'raw',
        run: async () => {
          const p = `${prefix}-raw${++n}`;
          await seedRaw(client, p, sizes.claims);
          const run = await timeOps(sizes.claims, CONCURRENCY, (i) =>
            client.evalsha(sha, 2, `{${p}}:free`, `{${p}}:holders`, `user-${i}`),
          );
          return summarise('raw', run.latencies, run.seconds);
        },
      },
      {
        label: 'dibs',
        run: async () => {
          const store = `${REDIS_URL}?prefix=${prefix}-dibs${++n}`;
          await seedDibs(store, sizes.claims);
          const d = await openDibs(store);
          try {
            const run = await timeOps(sizes.claims, CONCURRENCY, (i) => d.pools.claim('bench', `user-${i}`));
            return summarise('dibs', run.latencies, run.seconds);
          } finally {
            await d.close();
          }
        },
      },
    ]);
    return [
      ratio(
        'Redis claim vs the minimal claim script, 1 process, 32 in flight',
        '≥ 0.7×',
        'claims/s',
        raw!,
        dibs!,
        perSecond,
        `${load} → ${loadNow()}`,
      ),
    ];
  } finally {
    let cursor = '0';
    do {
      const [next, keys] = await client.scan(cursor, 'MATCH', `{${prefix}*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await client.del(...keys);
    } while (cursor !== '0');
    client.disconnect();
  }
}
