/** Headlines: flash-sale buys and reserve + confirm on PostgreSQL and SQLite (bench/lib/sale-bench.ts). */
import { saleRatios } from '../lib/sale-bench.js';
import type { Ratio } from '../lib/rounds.js';
import { openPgSaleBench } from '../sales-postgres.js';
import { openSqliteSaleBench } from '../sales-sqlite.js';
import type { Sizes } from './sizes.js';

export async function sales(sizes: Sizes): Promise<Ratio[]> {
  const rows: Ratio[] = [];
  for (const [store, open] of [
    ['PostgreSQL', openPgSaleBench],
    ['SQLite', openSqliteSaleBench],
  ] as const) {
    const bench = await open();
    try {
      rows.push(...(await saleRatios(bench, store, sizes.rounds, sizes.buys)));
    } finally {
      await bench.close();
    }
  }
  return rows;
}
