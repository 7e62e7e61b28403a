/**
 * Claim latency on a pool whose free codes are mostly closed: N codes not yet valid (their window
 * opens tomorrow), imported ahead of 500 open ones, then claims one by one (distinct claimants,
 * one process, no contention). The N = 0 pool — the same 500 open codes alone — is the baseline of
 * the same run: a claim should cost the same whatever N is.
 *
 * Claims run on a fresh connection opened after the import and warmed up on the same pool, so the
 * claim is measured and not a plan cached before the import (on PostgreSQL an import that grows
 * the table now analyzes it, see docs/benchmarks.md).
 *
 *   npm run bench -- closed-codes      (BENCH_CLOSED, default "0,50000"; e.g. "0,50000,500000";
 *                                       BENCH_CLOSED_CLAIMS, default 300 claims per pool)
 */
import { openDibs } from '../src/index.js';
import { onEachStore } from './lib/stores.js';

const SIZES = (process.env.BENCH_CLOSED ?? '0,50000').split(',').map(Number);
const CLAIMS = Number(process.env.BENCH_CLOSED_CLAIMS ?? 300);
const WARM_UP = 50;
const OPEN = 500;
const IMPORT_BATCH = 10_000;

export async function main(): Promise<void> {
  if (WARM_UP + CLAIMS > OPEN) throw new Error(`BENCH_CLOSED_CLAIMS must be at most ${OPEN - WARM_UP}`);
  const rows: string[] = [];
  await onEachStore('closed_codes', ['sqlite', 'postgres', 'redis'], async (label, store) => {
    for (const closed of SIZES) {
      const pool = `closed-${closed}`;
      const importer = await openDibs(store);
      let importSeconds: number;
      try {
        await importer.pools.create({ name: pool });
        const opens = new Date(Date.parse(await importer.backend.pools.clock()) + 86_400_000).toISOString();
        const t0 = performance.now();
        for (let from = 0; from < closed; from += IMPORT_BATCH) {
          const batch = Array.from({ length: Math.min(IMPORT_BATCH, closed - from) }, (_, i) => ({
            code: `LATER-${from + i}`,
            startsAt: opens,
          }));
          await importer.pools.importCodes(pool, batch);
        }
        await importer.pools.importCodes(
          pool,
          Array.from({ length: OPEN }, (_, i) => `NOW-${i}`),
        );
        importSeconds = (performance.now() - t0) / 1000;
      } finally {
        await importer.close();
      }
      const dibs = await openDibs(store);
      try {
        for (let i = 0; i < WARM_UP; i++) await dibs.pools.claim(pool, `warm-up-${i}`);
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
        rows.push(
          `| ${label} | ${closed.toLocaleString('en-US')} | ${mean.toFixed(2)} | ${p(0.5).toFixed(2)} | ${p(0.99).toFixed(2)} | ${importSeconds.toFixed(1)} |`,
        );
        await dibs.pools.delete(pool);
      } finally {
        await dibs.close();
      }
    }
  });
  console.log(
    `Claims on a pool with N not-yet-valid codes ahead of ${OPEN} open ones, ${CLAIMS} sequential claims each (after ${WARM_UP} warm-up claims):`,
  );
  console.log('| store | N closed | mean ms | p50 ms | p99 ms | import s |\n|---|---:|---:|---:|---:|---:|');
  for (const row of rows) console.log(row);
}
