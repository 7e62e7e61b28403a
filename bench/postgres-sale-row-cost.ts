/**
 * The server time of one grouped sale statement (sale-group.sql `stepGroup`) per step, for one or
 * more trees: g reservations of one sale in one statement, then their g confirmations in another,
 * in one transaction that is rolled back (every round starts from the same sale), trees
 * interleaved per round (tree 1, tree 2, tree 1, …), one connection, no contention: what the
 * statement costs while it holds the sale row lock, which every other step of the sale waits on.
 *   node --import tsx bench/postgres-sale-row-cost.ts
 * env: ROW_TREES comma-separated repo roots (default: this tree), each with its own schema and its
 *      own src/ (loaded by path); ROW_GROUPS (16,48,64); ROW_ROUNDS (40)
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { loadNow, spread } from './lib/rounds.js';

const URL_BASE = process.env.BENCH_PG_URL ?? 'postgres://root@127.0.0.1:5432/test';
const TREES = (process.env.ROW_TREES ?? resolve(import.meta.dirname, '..')).split(',');
const GROUPS = (process.env.ROW_GROUPS ?? '16,48,64').split(',').map(Number);
const ROUNDS = Number(process.env.ROW_ROUNDS ?? 40);
const WARM = 3;
const tag = `sale_row_cost_${process.pid}`;

interface Tree {
  root: string;
  client: pg.Client;
  stepGroup: string;
  sale: string;
  close: () => Promise<void>;
}

const trees: Tree[] = [];
try {
  for (const [t, root] of TREES.entries()) {
    const mod = await import(pathToFileURL(resolve(root, 'src/index.ts')).href);
    const sql = await import(pathToFileURL(resolve(root, 'src/backends/shared/sql-files.ts')).href);
    const G = sql.loadQueries(pathToFileURL(resolve(root, 'src/backends/postgres/sale-group.sql')), ['stepGroup']);
    const url = new URL(URL_BASE);
    url.searchParams.set('schema', `${tag}_t${t}`);
    const dibs = await mod.openDibs(url.href);
    const sale = await dibs.sales.create({
      sku: 'row-cost',
      cap: 1_000_000,
      perCustomerLimit: 1,
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const client = new pg.Client({ connectionString: URL_BASE, options: `-c search_path=${tag}_t${t}` });
    await client.connect();
    trees.push({ root, client, stepGroup: G.stepGroup, sale: sale.id, close: () => dibs.close() });
  }
  let n = 0;
  const once = async (tree: Tree, g: number) => {
    const c = tree.client;
    await c.query('BEGIN');
    const ids = Array.from({ length: g }, () => `h${++n}`);
    const none = ids.map(() => null);
    const t0 = performance.now();
    await c.query(tree.stepGroup, [
      tree.sale,
      ids.map((id) => `c-${id}`),
      ids.map(() => 1),
      none,
      ids,
      ids.map(() => 60_000),
      none,
    ]);
    const t1 = performance.now();
    await c.query(tree.stepGroup, [tree.sale, none, none, none, ids.map((id) => `o${id}`), none, ids]);
    const t2 = performance.now();
    await c.query('ROLLBACK');
    return { reserve: ((t1 - t0) * 1000) / g, confirm: ((t2 - t1) * 1000) / g };
  };
  const load = loadNow();
  const f = (xs: number[], d = 0) => {
    const s = spread(xs);
    return `${s.median.toFixed(d)} (${s.min.toFixed(d)}–${s.max.toFixed(d)})`;
  };
  for (const g of GROUPS) {
    const got = trees.map(() => ({ reserve: [] as number[], confirm: [] as number[] }));
    for (let r = 0; r < ROUNDS + WARM; r++)
      for (const [t, tree] of trees.entries()) {
        const m = await once(tree, g);
        if (r < WARM) continue;
        got[t]!.reserve.push(m.reserve);
        got[t]!.confirm.push(m.confirm);
      }
    for (const [t, tree] of trees.entries()) {
      const ratio = (k: 'reserve' | 'confirm') => got[t]![k].map((v, r) => v / got[0]![k][r]!);
      console.log(
        `g=${g} tree${t} ${tree.root}: µs/step reserve ${f(got[t]!.reserve)} (${f(ratio('reserve'), 2)}× tree0), confirm ${f(
          got[t]!.confirm,
        )} (${f(ratio('confirm'), 2)}× tree0)`,
      );
    }
  }
  console.log(`${ROUNDS} rounds; load ${load} → ${loadNow()}`);
} finally {
  const admin = new pg.Client({ connectionString: URL_BASE });
  await admin.connect();
  for (const [t, tree] of trees.entries()) {
    await tree.client.end().catch(() => {});
    await tree.close().catch(() => {});
    await admin.query(`DROP SCHEMA IF EXISTS ${tag}_t${t} CASCADE`).catch(() => {});
  }
  await admin.end();
}
