/**
 * Is the repeated sale-row UPDATE the cost of a grouped sale statement? Times sale-group.sql
 * `stepGroup` with g reservations then g confirmations of one sale (each statement in its own
 * transaction, rolled back so every round starts from the same state), with the functions as they
 * are ("as is") and with a copy whose `UPDATE sales` lines are removed ("no row update"; wrong
 * answers near the cap, fine on a sale far from it), variants interleaved per round.
 *   node --import tsx bench/postgres-sale-row-cost.ts     env: ROW_GROUPS (16,48,64), ROW_ROUNDS (30)
 */
import { readFileSync } from 'node:fs';
import pg from 'pg';
import { openDibs } from '../src/index.js';
import { loadQueries } from '../src/backends/shared/sql-files.js';
import { spread } from './lib/rounds.js';

const URL_BASE = process.env.BENCH_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const GROUPS = (process.env.ROW_GROUPS ?? '16,48,64').split(',').map(Number);
const ROUNDS = Number(process.env.ROW_ROUNDS ?? 30);
const schema = `sale_row_cost_${process.pid}`;
const G = loadQueries(new URL('../src/backends/postgres/sale-group.sql', import.meta.url), ['stepGroup']);
const fn = (name: string) =>
  readFileSync(new URL(`../src/backends/postgres/functions/${name}.sql`, import.meta.url), 'utf8').replace(
    /^DROP FUNCTION.*$/gm,
    '',
  );
const asIs = fn('sale_take') + fn('sale_confirm');
// Drop every `UPDATE sales ... WHERE id = ...;` (the counters) but keep the locking SELECT.
const noUpdate = asIs.replace(/UPDATE sales SET [^;]*;/g, (m) => (m.includes('RETURNING') ? 'SELECT * INTO s FROM sales WHERE id = s.id;' : 'NULL;'));

const url = new URL(URL_BASE);
url.searchParams.set('schema', schema);
const dibs = await openDibs(url.href);
const c = new pg.Client({ connectionString: URL_BASE, options: `-c search_path=${schema}` });
await c.connect();
try {
  const sale = await dibs.sales.create({
    sku: 'row-cost',
    cap: 1_000_000,
    perCustomerLimit: 1,
    startsAt: new Date().toISOString(),
    endsAt: new Date(Date.now() + 3_600_000).toISOString(),
  });
  let n = 0;
  const once = async (g: number) => {
    await c.query('BEGIN');
    const ids = Array.from({ length: g }, () => `h${++n}`);
    const t0 = performance.now();
    await c.query(G.stepGroup, [
      sale.id,
      ids.map((id) => `c-${id}`),
      ids.map(() => 1),
      ids.map(() => null),
      ids,
      ids.map(() => 60_000),
      ids.map(() => null),
    ]);
    const t1 = performance.now();
    await c.query(G.stepGroup, [
      sale.id,
      ids.map(() => null),
      ids.map(() => null),
      ids.map(() => null),
      ids.map((id) => `o${id}`),
      ids.map(() => null),
      ids,
    ]);
    const t2 = performance.now();
    await c.query('ROLLBACK');
    return { reserve: t1 - t0, confirm: t2 - t1 };
  };
  const variants = [
    { label: 'as is', sql: asIs },
    { label: 'no row update', sql: noUpdate },
  ];
  for (const g of GROUPS) {
    const got = variants.map(() => ({ reserve: [] as number[], confirm: [] as number[] }));
    for (let r = 0; r < ROUNDS + 3; r++)
      for (const [v, variant] of variants.entries()) {
        await c.query(variant.sql);
        await once(g); // replacing a function drops the session's cached plans: re-plan untimed
        const t = await once(g);
        if (r < 3) continue; // warm-up
        got[v]!.reserve.push((t.reserve * 1000) / g);
        got[v]!.confirm.push((t.confirm * 1000) / g);
      }
    for (const [v, variant] of variants.entries()) {
      const f = (xs: number[]) => {
        const s = spread(xs);
        return `${s.median.toFixed(0)} (${s.min.toFixed(0)}–${s.max.toFixed(0)})`;
      };
      console.log(`g=${g} ${variant.label}: µs/step reserve ${f(got[v]!.reserve)}, confirm ${f(got[v]!.confirm)}`);
    }
  }
} finally {
  await c.query(asIs).catch(() => {});
  await c.end();
  await dibs.close();
  const admin = new pg.Client({ connectionString: URL_BASE });
  await admin.connect();
  await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`);
  await admin.end();
}
