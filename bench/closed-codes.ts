/**
 * Claim latency on a pool whose free codes are mostly closed: N codes not yet valid (their window
 * opens tomorrow), imported ahead of 500 open ones, then claims one by one (distinct claimants,
 * one process, no contention). The N = 0 pool — the same 500 open codes alone — is the baseline of
 * the same run: a claim should cost the same whatever N is.
 *
 *   npm run bench -- closed-codes      (BENCH_CLOSED, default "0,50000"; e.g. "0,50000,500000";
 *                                       BENCH_CLOSED_CLAIMS, default 300 claims per pool)
 */
import { openDibs } from '../src/index.js';
import { onEachStore } from './lib/stores.js';

const SIZES = (process.env.BENCH_CLOSED ?? '0,50000').split(',').map(Number);
const CLAIMS = Number(process.env.BENCH_CLOSED_CLAIMS ?? 300);
const OPEN = 500;
const IMPORT_BATCH = 10_000;

export async function main(): Promise<void> {
  const rows: string[] = [];
  await onEachStore('closed_codes', ['sqlite', 'postgres', 'redis'], async (label, store) => {
    const dibs = await openDibs(store);
    try {
      // warm up (JIT, prepared statements, connections) on a throw-away pool, so N = 0 is not the cold one
      await dibs.pools.create({ name: 'warm-up' });
      await dibs.pools.importCodes('warm-up', Array.from({ length: CLAIMS }, (_, i) => `W-${i}`));
      for (let i = 0; i < CLAIMS; i++) await dibs.pools.claim('warm-up', `w-${i}`);
      for (const closed of SIZES) {
        const pool = `closed-${closed}`;
        await dibs.pools.create({ name: pool });
        const opens = new Date(Date.parse(await dibs.backend.pools.clock()) + 86_400_000).toISOString();
        const t0 = performance.now();
        for (let from = 0; from < closed; from += IMPORT_BATCH) {
          const batch = Array.from({ length: Math.min(IMPORT_BATCH, closed - from) }, (_, i) => ({ code: `LATER-${from + i}`, startsAt: opens }));
          await dibs.pools.importCodes(pool, batch);
        }
        await dibs.pools.importCodes(pool, Array.from({ length: OPEN }, (_, i) => `NOW-${i}`));
        const importSeconds = (performance.now() - t0) / 1000;
        const times: number[] = [];
        for (let i = 0; i < CLAIMS; i++) {
          const c0 = performance.now();
          const { code } = await dibs.pools.claim(pool, `claimant-${i}`);
          times.push(performance.now() - c0);
          if (!code.startsWith('NOW-')) throw new Error(`${label}: ${code} was handed out before its window opened`);
        }
        times.sort((a, b) => a - b);
        const mean = times.reduce((a, b) => a + b, 0) / times.length;
        const p = (q: number) => times[Math.min(times.length - 1, Math.floor(q * times.length))]!;
        rows.push(`| ${label} | ${closed.toLocaleString('en-US')} | ${mean.toFixed(2)} | ${p(0.5).toFixed(2)} | ${p(0.99).toFixed(2)} | ${importSeconds.toFixed(1)} |`);
        await dibs.pools.delete(pool);
      }
    } finally {
      await dibs.close();
    }
  });
  console.log(`Claims on a pool with N not-yet-valid codes ahead of ${OPEN} open ones, ${CLAIMS} sequential claims each:`);
  console.log('| store | N closed | mean ms | p50 ms | p99 ms | import s |\n|---|---:|---:|---:|---:|---:|');
  for (const row of rows) console.log(row);
}
