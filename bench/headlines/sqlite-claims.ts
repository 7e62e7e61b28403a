/**
 * Headlines: SQLite claims vs the raw better-sqlite3 statement (bench/sqlite.ts: WAL,
 * synchronous=FULL on both sides), 1 process and 4 processes on one file, as interleaved rounds on
 * fresh files; plus dibs' p99 with 4 processes and the import of a pool's codes.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDibs } from '../../src/index.js';
import { fanOut, summarise, timeOps } from '../lib/measure.js';
import { figure, interleave, loadNow, p99, perSecond, ratio, type Ratio } from '../lib/rounds.js';
import { seedDibs } from '../lib/seed.js';
import { createRawDb, RAW_CLAIM } from '../sqlite.js';
import type { Sizes } from './sizes.js';

const WORKER = new URL('../sqlite-worker.ts', import.meta.url);
const PROCESSES = 4;

export async function sqliteClaims(sizes: Sizes): Promise<Ratio[]> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-bench-summary-sqlite-'));
  try {
    let n = 0;
    const file = (name: string) => join(dir, `${name}-${++n}.db`);
    const importLoad = loadNow();
    const imports: number[] = [];
    for (let r = 0; r < sizes.rounds; r++) {
      const dibs = await openDibs(`sqlite:${file('import')}`);
      try {
        await dibs.pools.create({ name: 'import' });
        const started = performance.now();
        await dibs.pools.importCodes(
          'import',
          (function* () {
            for (let i = 0; i < sizes.importCodes; i++) yield `IMPORT-${i.toString(36)}-${(i * 7919).toString(36)}`;
          })(),
        );
        imports.push((performance.now() - started) / 1000);
      } finally {
        await dibs.close();
      }
    }
    const load = loadNow();
    const [raw1, dibs1, raw4, dibs4] = await interleave(sizes.rounds, [
      {
        label: 'raw 1',
        run: async () => {
          const f = file('raw');
          createRawDb(f, sizes.claims);
          const db = new Database(f);
          try {
            db.pragma('synchronous = FULL');
            const claim = db.prepare(RAW_CLAIM);
            const run = await timeOps(sizes.claims, 1, (i) => claim.get(`user-${i}`));
            return summarise('raw 1 process', run.latencies, run.seconds);
          } finally {
            db.close();
          }
        },
      },
      {
        label: 'dibs 1',
        run: async () => {
          const store = `sqlite:${file('dibs')}`;
          await seedDibs(store, sizes.claims);
          const dibs = await openDibs(store);
          try {
            const run = await timeOps(sizes.claims, 8, (i) => dibs.pools.claim('bench', `user-${i}`));
            return summarise('dibs 1 process', run.latencies, run.seconds);
          } finally {
            await dibs.close();
          }
        },
      },
      {
        label: 'raw 4',
        run: async () => {
          const f = file('raw-multi');
          createRawDb(f, sizes.claims);
          return fanOut('raw 4 processes', WORKER, PROCESSES, (i) => [
            'raw',
            f,
            String(sizes.claims / PROCESSES),
            `p${i}`,
          ]);
        },
      },
      {
        label: 'dibs 4',
        run: async () => {
          const store = `sqlite:${file('dibs-multi')}`;
          await seedDibs(store, sizes.claims);
          return fanOut('dibs 4 processes', WORKER, PROCESSES, (i) => [
            'dibs',
            store,
            String(sizes.claims / PROCESSES),
            `p${i}`,
          ]);
        },
      },
    ]);
    const during = `${load} → ${loadNow()}`;
    return [
      figure(
        `SQLite import of ${sizes.importCodes.toLocaleString('en-US')} codes`,
        '1M ≤ 10 s',
        's',
        imports,
        `${importLoad} → ${load}`,
      ),
      ratio('SQLite claims vs raw, 1 process', '≥ 0.9×', 'claims/s', raw1!, dibs1!, perSecond, during),
      ratio('SQLite claims vs raw, 4 processes', '≥ 0.9×', 'claims/s', raw4!, dibs4!, perSecond, during),
      figure('SQLite claim p99, 4 processes', '≤ 10 ms', 'ms', dibs4!.map(p99), during),
    ];
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
