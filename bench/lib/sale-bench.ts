/**
 * The flash-sale comparison every ledger store runs (sales-postgres.ts, sales-sqlite.ts): the
 * store's file brings its raw baseline; dibs' side, the rounds and the report are the same here.
 */
import type { Dibs } from '../../src/index.js';
import { printTable, summarise, timeOps, type RunStats } from './measure.js';
import { interleave, loadNow, perSecond, printRatios, ratio, type Ratio } from './rounds.js';

/** The raw side and dibs on one store, each run on a fresh sale of its own. */
export interface SaleBench {
  /** The raw baseline: a conditional `sold = sold + 1 WHERE sold < cap` plus the order, per buy. */
  rawBuy(callers: number, buys: number): Promise<RunStats>;
  /** dibs `sales.buy`, half of the buys with an idempotency key, per-customer limit 1. */
  dibsBuy(callers: number, buys: number): Promise<RunStats>;
  /** dibs reserve then confirm, per op. */
  dibsReserveConfirm(callers: number, buys: number): Promise<RunStats>;
  /** dibs `sales.buy` on a sold-out sale (every answer sold_out). */
  dibsRefusals(callers: number, buys: number): Promise<RunStats>;
  close(): Promise<void>;
}

/** The headline sale ratios at 16 and 128 callers, as interleaved rounds (raw, buy, reserve + confirm, …). */
export async function saleRatios(bench: SaleBench, store: string, rounds: number, buys: number): Promise<Ratio[]> {
  const rows: Ratio[] = [];
  for (const callers of [16, 128]) {
    const before = loadNow();
    const [raw, buy, hold] = await interleave(rounds, [
      { label: 'raw', run: () => bench.rawBuy(callers, buys) },
      { label: 'buy', run: () => bench.dibsBuy(callers, buys) },
      { label: 'reserve+confirm', run: () => bench.dibsReserveConfirm(callers, buys) },
    ]);
    const load = `${before} → ${loadNow()}`;
    rows.push(
      ratio(
        `${store} sales.buy vs raw conditional UPDATE + order, ${callers} callers`,
        '≥ 2×',
        'buys/s',
        raw!,
        buy!,
        perSecond,
        load,
      ),
    );
    rows.push(
      ratio(`${store} reserve + confirm vs raw, ${callers} callers`, '≥ 1×', 'ops/s', raw!, hold!, perSecond, load),
    );
  }
  return rows;
}

const HOUR = 3_600_000;

/** dibs' side of a SaleBench on any store, each run on a fresh live sale with perCustomerLimit 1. */
export function dibsSaleSteps(
  dibs: Dibs,
): Pick<SaleBench, 'dibsBuy' | 'dibsReserveConfirm' | 'dibsRefusals'> & { warm(callers: number): Promise<void> } {
  let next = 0;
  const newSale = (cap: number) =>
    dibs.sales.create({
      sku: `BENCH-${++next}`,
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + HOUR).toISOString(),
      cap,
      perCustomerLimit: 1,
    });
  const audited = async (id: string, sold: number) => {
    const audit = await dibs.sales.audit(id);
    if ((await dibs.sales.get(id)).stats.sold !== sold || audit.length)
      throw new Error(`dibs sold wrong or audit failed: ${JSON.stringify(audit)}`);
  };
  return {
    /** Untimed buys on a sale of their own: connections, prepared statements, JIT. */
    async warm(callers) {
      const warm = await newSale(200);
      await timeOps(200, callers, (i) => dibs.sales.buy(warm.id, `warm-${i}`));
    },
    async dibsBuy(callers, buys) {
      const sale = await newSale(buys);
      const run = await timeOps(buys, callers, (i) =>
        dibs.sales.buy(sale.id, `user-${i}`, 1, i % 2 === 0 ? { idempotencyKey: `k-${i}` } : {}),
      );
      await audited(sale.id, buys);
      return summarise(`dibs sales.buy (half keyed), ${callers} callers`, run.latencies, run.seconds);
    },
    async dibsReserveConfirm(callers, buys) {
      const sale = await newSale(buys);
      const run = await timeOps(buys, callers, async (i) => {
        const { hold } = await dibs.sales.reserve(sale.id, `user-${i}`, 1, 60_000);
        await dibs.sales.confirm(hold.id);
      });
      await audited(sale.id, buys);
      return summarise(`dibs reserve + confirm (2 steps per op), ${callers} callers`, run.latencies, run.seconds);
    },
    async dibsRefusals(callers, buys) {
      const sale = await newSale(1);
      await dibs.sales.buy(sale.id, 'first');
      const run = await timeOps(buys, callers, async (i) => {
        await dibs.sales.buy(sale.id, `late-${i}`).then(
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
  };
}

/** The whole benchmark of one store: the interleaved ratios, then the refusals after a sell-out; closes the bench. */
export async function runSaleBench(
  bench: SaleBench,
  report: {
    store: string;
    setting: string;
    rounds: number;
    buys: number;
    refusalCallers: number;
    refusalTitle: string;
  },
): Promise<void> {
  try {
    const rows = await saleRatios(bench, report.store, report.rounds, report.buys);
    printRatios(
      `${report.store} flash-sale steps on one hot sale, ${report.buys} ops per run, ${report.setting}, ${report.rounds} interleaved rounds`,
      rows,
    );
    const raw = await bench.rawBuy(report.refusalCallers, report.buys);
    printTable(report.refusalTitle, [raw, await bench.dibsRefusals(report.refusalCallers, report.buys)], raw);
  } finally {
    await bench.close();
  }
}
