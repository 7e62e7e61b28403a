/**
 * Flash-sale buys on SQLite: the raw baseline (better-sqlite3, the same file settings as dibs: WAL,
 * synchronous=FULL; one transaction per buy: `UPDATE … SET sold = sold + 1 WHERE sold < cap`, then
 * the order insert — no per-customer limit, no idempotency, no holds) vs dibs `sales.buy` and dibs
 * reserve + confirm on one hot sale, at 16 and 128 callers in one process, as interleaved rounds
 * with the median and spread of the same-round ratios. dibs' writes of a process that wait at the
 * same time share one transaction and one commit (sqlite/database.ts `write`).
 *
 *   npm run bench -- sales-sqlite
 *   BENCH_SALE_BUYS=5000 BENCH_ROUNDS=5 npm run bench -- sales-sqlite
 *
 * Everything runs in a temp directory removed at the end.
 */
import Database from 'better-sqlite3';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { openDibs, type Dibs } from '../src/index.js';
import { summarise, timeOps } from './lib/measure.js';
import { dibsSaleSteps, runSaleBench, type SaleBench } from './lib/sale-bench.js';

const BUYS = Number(process.env.BENCH_SALE_BUYS ?? 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

export async function openSqliteSaleBench(): Promise<SaleBench> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-bench-sales-sqlite-'));
  const raw = new Database(join(dir, 'raw.db'));
  let dibs: Dibs | undefined;
  try {
    raw.pragma('journal_mode = WAL');
    raw.pragma('synchronous = FULL');
    raw.exec(`CREATE TABLE raw_sales (id INTEGER PRIMARY KEY, cap INTEGER NOT NULL, sold INTEGER NOT NULL DEFAULT 0);
              CREATE TABLE raw_orders (id INTEGER PRIMARY KEY, sale_id INTEGER NOT NULL, customer TEXT NOT NULL, created_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now')));`);
    dibs = await openDibs(`sqlite:${join(dir, 'dibs.db')}`);
  } catch (error) {
    raw.close();
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  const d = dibs;
  const insertSale = raw.prepare('INSERT INTO raw_sales (id, cap) VALUES (?, ?)');
  const take = raw.prepare('UPDATE raw_sales SET sold = sold + 1 WHERE id = ? AND sold < cap');
  const order = raw.prepare('INSERT INTO raw_orders (sale_id, customer) VALUES (?, ?)');
  const rawBuy = raw.transaction((sale: number, customer: string) =>
    take.run(sale).changes === 1 ? (order.run(sale, customer), 1) : 0,
  );
  const steps = dibsSaleSteps(d);
  let next = 0;
  return {
    async rawBuy(callers, buys) {
      const id = ++next;
      insertSale.run(id, buys);
      let sold = 0;
      // better-sqlite3 is synchronous: the callers take turns, one transaction (one commit) per buy.
      const run = await timeOps(buys, callers, async (i) => {
        sold += rawBuy(id, `user-${i}`);
      });
      if (sold !== buys) throw new Error(`raw sold ${sold} of ${buys}`);
      return summarise(
        `raw conditional UPDATE + order (better-sqlite3), ${callers} callers`,
        run.latencies,
        run.seconds,
      );
    },
    ...steps,
    async close() {
      await d.close().catch(() => {});
      raw.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function main(): Promise<void> {
  await runSaleBench(await openSqliteSaleBench(), {
    store: 'SQLite',
    setting: 'synchronous=FULL, WAL, one process',
    rounds: ROUNDS,
    buys: BUYS,
    refusalCallers: 16,
    refusalTitle: 'After the sell-out (one run, vs the raw buy)',
  });
}
