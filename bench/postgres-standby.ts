/**
 * PostgreSQL claims with a synchronous vs an asynchronous standby: a primary and a streaming
 * standby started here (test/support/pg-cluster.ts), the replication link behind a relay that
 * delays each way by BENCH_STANDBY_DELAY_MS (default "0,20": same zone, then cross-zone). The
 * primary is switched between the two modes with a reload, and the rounds interleave
 * (sync, async, sync, …) so a machine busy with something else hurts both alike; the table gives
 * the median and the spread (min–max) of claims/s over BENCH_STANDBY_ROUNDS rounds per mode.
 *
 *   npm run bench -- postgres-standby
 *   BENCH_STANDBY_DELAY_MS=20 BENCH_STANDBY_ROUNDS=5 BENCH_STANDBY_CLAIMS=3000 npm run bench -- postgres-standby
 *
 * Needs the PostgreSQL server binaries (initdb, pg_basebackup, postgres).
 */
import { openDibs } from '../src/index.js';
import { startReplicatedPair } from '../test/support/pg-cluster.js';
import { summarise, timeOps, type RunStats } from './lib/measure.js';

const DELAYS = (process.env.BENCH_STANDBY_DELAY_MS ?? '0,20').split(',').map(Number);
const ROUNDS = Number(process.env.BENCH_STANDBY_ROUNDS ?? 5);
const CLAIMS = Number(process.env.BENCH_STANDBY_CLAIMS ?? 3000);
const CONNECTIONS = Number(process.env.BENCH_STANDBY_CONNECTIONS ?? 16);
const CALLERS = Number(process.env.BENCH_STANDBY_CALLERS ?? 64);

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

export async function main(): Promise<void> {
  console.log(
    `${CLAIMS} claims per round, ${ROUNDS} rounds per mode (interleaved), ${CONNECTIONS} connections, ${CALLERS} callers, grouped claims (the default)`,
  );
  console.log('| link delay (each way) | standby | claims/s median | spread (min–max) | p50 ms | p99 ms |');
  console.log('|---:|---|---:|---:|---:|---:|');
  for (const delayMs of DELAYS) {
    const pair = await startReplicatedPair({ sync: true, delayMs });
    try {
      const dibs = await openDibs(pair.store({ schema: 'bench', poolSize: String(CONNECTIONS) }));
      const runs: Record<'sync' | 'async', RunStats[]> = { sync: [], async: [] };
      try {
        for (let round = 0; round < ROUNDS; round++) {
          for (const mode of ['sync', 'async'] as const) {
            await pair.setSynchronous(mode === 'sync');
            const pool = `p-${delayMs}-${round}-${mode}`;
            await dibs.pools.create({ name: pool });
            await dibs.pools.importCodes(
              pool,
              Array.from({ length: CLAIMS }, (_, i) => `C-${i}`),
            );
            const run = await timeOps(CLAIMS, CALLERS, (i) => dibs.pools.claim(pool, `user-${i}`));
            runs[mode].push(summarise(mode, run.latencies, run.seconds));
          }
        }
      } finally {
        await dibs.close();
      }
      for (const mode of ['sync', 'async'] as const) {
        const rates = runs[mode].map((r) => r.perSecond);
        console.log(
          `| ${delayMs} ms | ${mode === 'sync' ? 'synchronous (FIRST 1, synchronous_commit=on)' : 'asynchronous'} | ${Math.round(median(rates))} | ${Math.round(Math.min(...rates))}–${Math.round(Math.max(...rates))} | ${median(runs[mode].map((r) => r.p50)).toFixed(1)} | ${median(runs[mode].map((r) => r.p99)).toFixed(1)} |`,
        );
      }
    } finally {
      await pair.stop();
    }
  }
}
