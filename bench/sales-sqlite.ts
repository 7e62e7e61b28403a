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
import { printTable, summarise, timeOps } from './lib/measure.js';
import { printRatios } from './lib/rounds.js';
import { saleRatios, type SaleBench } from './lib/sale-bench.js';

const BUYS = Number(process.env.BENCH_SALE_BUYS ?? 3000);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);
const HOUR = 3_600_000;

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
  let next = 0;
  const newSale = (cap: number) =>
    d.sales.create({
      sku: `BENCH-${++next}`,
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + HOUR).toISOString(),
      cap,
      perCustomerLimit: 1,
    });
  const audited = async (id: string, sold: number) => {
    const audit = await d.sales.audit(id);
    if ((await d.sales.get(id)).stats.sold !== sold || audit.length)
      throw new Error(`dibs sold wrong or audit failed: ${JSON.stringify(audit)}`);
  };
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
    async dibsBuy(callers, buys) {
      const sale = await newSale(buys);
      const run = await timeOps(buys, callers, (i) =>
        d.sales.buy(sale.id, `user-${i}`, 1, i % 2 === 0 ? { idempotencyKey: `k-${i}` } : {}),
      );
      await audited(sale.id, buys);
      return summarise(`dibs sales.buy (half keyed), ${callers} callers`, run.latencies, run.seconds);
    },
    async dibsReserveConfirm(callers, buys) {
      const sale = await newSale(buys);
      const run = await timeOps(buys, callers, async (i) => {
        const { hold } = await d.sales.reserve(sale.id, `user-${i}`, 1, 60_000);
        await d.sales.confirm(hold.id);
      });
      await audited(sale.id, buys);
      return summarise(`dibs reserve + confirm (2 steps per op), ${callers} callers`, run.latencies, run.seconds);
    },
    async dibsRefusals(callers, buys) {
      const sale = await newSale(1);
      await d.sales.buy(sale.id, 'first');
      const run = await timeOps(buys, callers, async (i) => {
        await d.sales.buy(sale.id, `late-${i}`).then(
          () => {
            throw new Error('sold past the cap');
          },
          (error: { code?: string }) => {
            if (error.code !== 'sold_out') throw error;
          },
        );
      });
      return summarise(
        `dibs sales.buy after the sell-out (sold_out answers), ${callers} callers`,
        run.latencies,
        run.seconds,
      );
    },
    async close() {
      await d.close().catch(() => {});
      raw.close();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export async function main(): Promise<void> {
  const bench = await openSqliteSaleBench();
  try {
    const rows = await saleRatios(bench, 'SQLite', ROUNDS, BUYS);
    printRatios(
      `SQLite flash-sale steps on one hot sale, ${BUYS} ops per run, synchronous=FULL, WAL, one process, ${ROUNDS} interleaved rounds`,
      rows,
    );
    const raw = await bench.rawBuy(16, BUYS);
    printTable('After the sell-out (one run, vs the raw buy)', [raw, await bench.dibsRefusals(16, BUYS)], raw);
  } finally {
    await bench.close();
  }
}
