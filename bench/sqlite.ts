/**
 * SQLite: dibs' claim (limit + idempotency + counters + outbox check in one IMMEDIATE
 * transaction) vs a raw better-sqlite3 baseline doing the bare single statement
 * `UPDATE … SET claimant … WHERE id = (first free) RETURNING code` — same file settings
 * (WAL, synchronous=FULL), same machine, same run. Single process and 4 processes.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDibs } from '../src/index.js';
import { fanOut, printTable, summarise, timeOps, type RunStats } from './lib/measure.js';
import { seedDibs } from './lib/seed.js';

const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 20_000);
const PROCESSES = Number(process.env.BENCH_PROCESSES ?? 4);
const WORKER = new URL('./sqlite-worker.ts', import.meta.url);

export function createRawDb(file: string, codes: number): void {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.exec(`CREATE TABLE IF NOT EXISTS codes (id INTEGER PRIMARY KEY, code TEXT NOT NULL UNIQUE, claimant TEXT);
           CREATE INDEX IF NOT EXISTS codes_free ON codes (id) WHERE claimant IS NULL;`);
  const insert = db.prepare('INSERT INTO codes (code) VALUES (?)');
  db.transaction(() => {
    for (let i = 0; i < codes; i++) insert.run(`RAW-${i}`);
  })();
  db.close();
}

export const RAW_CLAIM = `UPDATE codes SET claimant = ? WHERE id = (SELECT id FROM codes WHERE claimant IS NULL ORDER BY id LIMIT 1) RETURNING code`;

export async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-bench-sqlite-'));
  try {
    const rows: RunStats[] = [];
    // Single process.
    const rawFile = join(dir, 'raw.db');
    createRawDb(rawFile, CLAIMS);
    const raw = new Database(rawFile);
    raw.pragma('synchronous = FULL');
    const claim = raw.prepare(RAW_CLAIM);
    const rawRun = await timeOps(CLAIMS, 1, (i) => claim.get(`user-${i}`));
    raw.close();
    const baseline = summarise('raw better-sqlite3, 1 process', rawRun.latencies, rawRun.seconds);
    rows.push(baseline);

    const store = `sqlite:${join(dir, 'dibs.db')}`;
    await seedDibs(store, CLAIMS);
    const dibs = await openDibs(store);
    const dibsRun = await timeOps(CLAIMS, 8, (i) => dibs.pools.claim('bench', `user-${i}`));
    await dibs.close();
    rows.push(summarise('dibs claim, 1 process', dibsRun.latencies, dibsRun.seconds));

    // Several processes sharing one file.
    const rawMulti = join(dir, 'raw-multi.db');
    createRawDb(rawMulti, CLAIMS);
    const rawShared = await fanOut(`raw better-sqlite3, ${PROCESSES} processes`, WORKER, PROCESSES, (i) => [
      'raw',
      rawMulti,
      String(CLAIMS / PROCESSES),
      `p${i}`,
    ]);
    const storeMulti = `sqlite:${join(dir, 'dibs-multi.db')}`;
    await seedDibs(storeMulti, CLAIMS);
    const dibsShared = await fanOut(`dibs claim, ${PROCESSES} processes`, WORKER, PROCESSES, (i) => [
      'dibs',
      storeMulti,
      String(CLAIMS / PROCESSES),
      `p${i}`,
    ]);

    printTable(
      `SQLite claims, ${CLAIMS} claims, synchronous=FULL, WAL (ratio vs raw 1 process)`,
      [...rows, rawShared, dibsShared],
      baseline,
    );
    console.log(
      `\nratio dibs/raw: 1 process ${(rows[1]!.perSecond / baseline.perSecond).toFixed(2)}×, ${PROCESSES} processes ${(dibsShared.perSecond / rawShared.perSecond).toFixed(2)}×`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
