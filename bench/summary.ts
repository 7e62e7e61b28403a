/**
 * `npm run bench -- summary`: every headline ratio of the hot paths in one go, each as interleaved
 * rounds (baseline, dibs, baseline, dibs, …) with the median and spread of the same-round ratios,
 * and one table at the end (the table docs/benchmarks.md leads with).
 *
 *   npm run bench -- summary --quick                  bounded: 3 rounds of small runs (~10 min)
 *   npm run bench -- summary                          5 rounds, fuller runs (1M-code imports)
 *   npm run bench -- summary --rounds=7 --only=sales,locks
 *
 * Sections (--only=): postgres-claims, sqlite-claims, redis-claims, sales, locks, seed, http (SQLite,
 * builds dist/ first when it is stale). A section that fails (a store unreachable) is reported as
 * skipped; the others still run.
 */
import { cpus, hostname } from 'node:os';
import { http } from './headlines/http.js';
import { postgresClaims } from './headlines/postgres-claims.js';
import { postgresLocks } from './headlines/locks.js';
import { redisClaims } from './headlines/redis-claims.js';
import { sales } from './headlines/sales.js';
import { seedScenario } from './headlines/seed.js';
import { sizesFor, type Sizes } from './headlines/sizes.js';
import { sqliteClaims } from './headlines/sqlite-claims.js';
import { loadNow, printRatios, type Ratio } from './lib/rounds.js';

const SECTIONS: Record<string, (sizes: Sizes) => Promise<Ratio[]>> = {
  'postgres-claims': postgresClaims,
  'sqlite-claims': sqliteClaims,
  'redis-claims': redisClaims,
  sales,
  locks: postgresLocks,
  seed: seedScenario,
  http,
};

/** `--name=value` (run.ts takes every argument without a leading dash for a benchmark name). */
function option(name: string): string | undefined {
  return process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

export async function main(): Promise<void> {
  const quick = process.argv.includes('--quick');
  const rounds = option('rounds');
  const sizes = sizesFor(quick, rounds ? Number(rounds) : undefined);
  const only = option('only')?.split(',') ?? Object.keys(SECTIONS);
  for (const name of only)
    if (!SECTIONS[name]) throw new Error(`unknown section '${name}' (sections: ${Object.keys(SECTIONS).join(', ')})`);
  const started = new Date();
  const before = loadNow();
  console.log(
    `summary on ${hostname()} (${cpus().length} cores), ${quick ? 'quick' : 'full'}: ${JSON.stringify(sizes)}; load average ${before}`,
  );
  const rows: Ratio[] = [];
  const skipped: string[] = [];
  for (const name of only) {
    const t = performance.now();
    try {
      const got = await SECTIONS[name]!(sizes);
      rows.push(...got);
      printRatios(`${name} (${((performance.now() - t) / 1000).toFixed(0)} s)`, got);
    } catch (error) {
      skipped.push(`${name}: ${(error as Error).message}`);
      console.log(`${name} failed or skipped: ${(error as Error).message}`);
    }
  }
  printRatios(
    `Summary, ${started.toISOString()} → ${new Date().toISOString()}, ${sizes.rounds} interleaved rounds per figure, load average ${before} before`,
    rows,
  );
  for (const s of skipped) console.log(`skipped ${s}`);
}
