/**
 * CSV import with and without per-code windows, per store, same run: the same codes once as a
 * bare `code` column (the baseline) and once with `starts_at,expires_at` columns (half the rows
 * open now, a quarter not yet valid, a quarter expired), each into a fresh pool. Firestore has no
 * per-code windows (it refuses such an import) and is left out.
 *
 *   npm run bench -- import-windows      (BENCH_IMPORT_ROWS, default 50,000; BENCH_IMPORT_RUNS, default 3)
 */
import { openDibs } from '../src/index.js';
import { onEachStore } from './lib/stores.js';

const ROWS = Number(process.env.BENCH_IMPORT_ROWS ?? 50_000);
const RUNS = Number(process.env.BENCH_IMPORT_RUNS ?? 3);
const hour = 3_600_000;

function csvOf(windows: boolean, now: number, run: number): string {
  const iso = (ms: number) => new Date(ms).toISOString();
  const lines = [windows ? 'code,starts_at,expires_at' : 'code'];
  for (let i = 0; i < ROWS; i++) {
    const code = `IMP-${run}-${String(i).padStart(8, '0')}`;
    if (!windows) lines.push(code);
    else if (i % 4 === 0)
      lines.push(`${code},${iso(now + hour)},`); // not yet valid
    else if (i % 4 === 1)
      lines.push(`${code},${iso(now - 2 * hour)},${iso(now - hour)}`); // expired
    else lines.push(`${code},${iso(now - hour)},${iso(now + 24 * hour)}`); // open
  }
  return `${lines.join('\n')}\n`;
}

export async function main(): Promise<void> {
  const rows: string[] = [];
  await onEachStore('import_windows', ['sqlite', 'postgres', 'redis'], async (label, store) => {
    const dibs = await openDibs(store);
    try {
      const seconds: Record<'plain' | 'windows', number[]> = { plain: [], windows: [] };
      for (let run = 0; run < RUNS; run++) {
        // alternate the order, so neither side always runs on a warmer store
        for (const kind of run % 2 === 0 ? (['plain', 'windows'] as const) : (['windows', 'plain'] as const)) {
          const pool = `${kind}-${run}`;
          await dibs.pools.create({ name: pool });
          const csv = csvOf(kind === 'windows', Date.parse(await dibs.backend.pools.clock()), run);
          const t0 = performance.now();
          const result = await dibs.pools.importCsv(pool, csv);
          seconds[kind].push((performance.now() - t0) / 1000);
          if (result.imported !== ROWS) throw new Error(`${label} ${kind}: imported ${result.imported} of ${ROWS}`);
          if (
            kind === 'windows' &&
            (await dibs.pools.claimMany(pool, 'probe', 10)).codes.some((c) => Number(c.slice(-8)) % 4 < 2)
          ) {
            throw new Error(`${label}: a code outside its window was handed out`);
          }
        }
      }
      const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;
      const rate = (s: number) => Math.round(ROWS / s).toLocaleString('en-US');
      const [plain, windows] = [median(seconds.plain), median(seconds.windows)];
      rows.push(
        `| ${label} | ${plain.toFixed(2)} | ${rate(plain)} | ${windows.toFixed(2)} | ${rate(windows)} | ${(windows / plain).toFixed(2)}× |`,
      );
    } finally {
      await dibs.close();
    }
  });
  console.log(`CSV import of ${ROWS.toLocaleString('en-US')} rows, median of ${RUNS} runs (fresh pool each):`);
  console.log(
    '| store | plain s | plain rows/s | windows s | windows rows/s | windows / plain time |\n|---|---:|---:|---:|---:|---:|',
  );
  for (const row of rows) console.log(row);
}
