/**
 * Rate limits: dibs vs rate-limiter-flexible (RateLimiterRedis / RateLimiterPostgres, the most
 * used npm limiter) on Redis and PostgreSQL, in the same run, in interleaved rounds
 * (baseline, dibs quota, dibs sliding window, baseline, …). Each run: CONCURRENCY loops in this
 * process take 1 unit of a fresh key of a LIMIT-per-1-s limit as fast as the store answers, for
 * DURATION ms. Reported per variant, median and spread (min–max) over the rounds:
 *   decisions/s  every answer (admitted or denied): the store's decision throughput
 *   admitted/s ÷ limit  how much of the allowance was used (a fresh key starts with a full window,
 *                so a run of a few seconds may use somewhat more than 1; denser is not better here)
 *   worst 1 s    the most admitted in any 1 s window ÷ LIMIT: > 1 = over-admitted. By the client's
 *                clock of each answer (reply latency jitter included, the same for both); dibs also
 *                by the store's clock of its decisions (`at`), the time line it decides by
 * rate-limiter-flexible counts fixed windows opened by the first consume (its expiry from the
 * client's clock on PostgreSQL), so its worst 1 s window can reach 2 × LIMIT at a window edge;
 * dibs' quota is the same fixed-window rule (aligned to the epoch), dibs' sliding window never
 * exceeds LIMIT in any window.
 *
 *   npm run bench -- limits    (LIMITS_BENCH_ROUNDS=5 LIMITS_BENCH_MS=5000 LIMITS_BENCH_C=32
 *                               LIMITS_BENCH_LIMIT=200 LIMITS_BENCH_STORES=redis,postgres)
 */
import { Redis } from 'ioredis';
import pg from 'pg';
import { RateLimiterPostgres, RateLimiterRedis, type RateLimiterAbstract } from 'rate-limiter-flexible';
import { openDibs, type Dibs } from '../src/index.js';
import { onEachStore, BENCH_PG, BENCH_REDIS } from './lib/stores.js';

const ROUNDS = Number(process.env.LIMITS_BENCH_ROUNDS ?? 5);
const DURATION_MS = Number(process.env.LIMITS_BENCH_MS ?? 5000);
const CONCURRENCY = Number(process.env.LIMITS_BENCH_C ?? 32);
const LIMIT = Number(process.env.LIMITS_BENCH_LIMIT ?? 200);
const STORES = (process.env.LIMITS_BENCH_STORES ?? 'redis,postgres').split(',') as ('redis' | 'postgres')[];

interface Run {
  perSecond: number;
  used: number;
  worst: number;
  worstStore: number | null;
}
/** Admitted or not; dibs also answers the store's clock of the decision. */
type Take = (key: string) => Promise<{ ok: boolean; at?: number }>;

async function measure(take: Take, key: string): Promise<Run> {
  const admitted: number[] = [];
  const atStore: number[] = [];
  let decisions = 0;
  const started = performance.now();
  const end = started + DURATION_MS;
  await Promise.all(
    Array.from({ length: CONCURRENCY }, async () => {
      while (performance.now() < end) {
        const { ok, at } = await take(key);
        if (ok) {
          admitted.push(performance.now());
          if (at !== undefined) atStore.push(at);
        }
        decisions++;
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  return {
    perSecond: decisions / seconds,
    used: admitted.length / (LIMIT * seconds),
    worst: worstSecond(admitted) / LIMIT,
    worstStore: atStore.length ? worstSecond(atStore) / LIMIT : null,
  };
}

/** The most admissions in any window [t − 1000 ms, t], closed (as the sliding window promises). */
function worstSecond(times: number[]): number {
  const sorted = [...times].sort((a, b) => a - b);
  let worst = 0;
  for (let lo = 0, hi = 0; hi < sorted.length; hi++) {
    while (sorted[lo]! < sorted[hi]! - 1000) lo++;
    worst = Math.max(worst, hi - lo + 1);
  }
  return worst;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
const spread = (xs: number[], digits: number) =>
  `${Math.min(...xs).toFixed(digits)}–${Math.max(...xs).toFixed(digits)}`;

function rlfTake(limiter: RateLimiterAbstract): Take {
  return async (key) => {
    try {
      await limiter.consume(key, 1);
      return { ok: true };
    } catch (rejection) {
      if (rejection instanceof Error) throw rejection;
      return { ok: false }; // a RateLimiterRes: over the limit
    }
  };
}

const dibsTake =
  (dibs: Dibs, name: string): Take =>
  async (key) => {
    const d = await dibs.limits.take(name, 1, { key });
    return { ok: d.allowed, at: d.at };
  };

async function baselineFor(
  kind: 'redis' | 'postgres',
  tag: string,
): Promise<{ limiter: RateLimiterAbstract; close: () => Promise<void> }> {
  if (kind === 'redis') {
    const client = new Redis(BENCH_REDIS, { enableOfflineQueue: true });
    const limiter = new RateLimiterRedis({ storeClient: client, keyPrefix: `${tag}-rlf`, points: LIMIT, duration: 1 });
    return {
      limiter,
      close: async () => {
        const keys = await client.keys(`${tag}-rlf*`);
        if (keys.length) await client.del(...keys);
        client.disconnect();
      },
    };
  }
  const pool = new pg.Pool({ connectionString: BENCH_PG, max: 10 });
  const table = `${tag}_rlf`;
  const limiter = await new Promise<RateLimiterAbstract>((resolve, reject) => {
    const l: RateLimiterAbstract = new RateLimiterPostgres(
      { storeClient: pool, tableName: table, points: LIMIT, duration: 1 },
      (error?: unknown) => (error ? reject(error) : resolve(l)),
    );
  });
  return {
    limiter,
    close: async () => {
      await pool.query(`DROP TABLE IF EXISTS "${table}"`);
      await pool.end();
    },
  };
}

export async function main(): Promise<void> {
  console.log(
    `limit ${LIMIT}/s, ${CONCURRENCY} concurrent takers in one process, ${DURATION_MS} ms per run, ${ROUNDS} interleaved rounds`,
  );
  for (const kind of STORES) {
    await onEachStore('limits', [kind], async (label, store) => {
      const tag = `bench_limits_${process.pid}`;
      const dibs = await openDibs(kind === 'postgres' ? `${store}&poolSize=10` : store);
      const baseline = await baselineFor(kind, tag);
      try {
        await dibs.limits.create({ name: 'quota', algorithm: 'quota', limit: LIMIT, periodMs: 1000 });
        await dibs.limits.create({
          name: 'sliding',
          algorithm: 'sliding-window',
          limit: LIMIT,
          periodMs: 1000,
          segments: 10,
        });
        const variants: [string, Take][] = [
          ['rate-limiter-flexible', rlfTake(baseline.limiter)],
          ['dibs quota (fixed window)', dibsTake(dibs, 'quota')],
          ['dibs sliding window', dibsTake(dibs, 'sliding')],
        ];
        const runs = new Map<string, Run[]>(variants.map(([name]) => [name, []]));
        for (let round = 0; round < ROUNDS; round++) {
          for (const [name, take] of variants) runs.get(name)!.push(await measure(take, `r${round}`));
        }
        console.log(`\n${label}:`);
        for (const [name, rs] of runs) {
          const per = rs.map((r) => r.perSecond);
          const used = rs.map((r) => r.used);
          const worst = rs.map((r) => r.worst);
          const store = rs.map((r) => r.worstStore).filter((w): w is number => w !== null);
          console.log(
            `  ${name.padEnd(26)} ${median(per).toFixed(0).padStart(6)} decisions/s (${spread(per, 0)})  admitted/s ÷ limit ${median(used).toFixed(3)} (${spread(used, 3)})  worst 1 s ${median(worst).toFixed(3)} × limit (${spread(worst, 3)})${store.length ? `, by the store's clock ${median(store).toFixed(3)} (${spread(store, 3)})` : ''}`,
          );
        }
      } finally {
        await baseline.close();
        await dibs.close();
      }
    });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
