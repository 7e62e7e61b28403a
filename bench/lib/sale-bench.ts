/** The flash-sale comparison every ledger store runs (sales-postgres.ts, sales-sqlite.ts). */
import type { RunStats } from './measure.js';
import { interleave, loadNow, perSecond, ratio, type Ratio } from './rounds.js';

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
