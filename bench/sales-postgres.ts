/**
 * Flash-sale buys on PostgreSQL: the raw baseline (the Rails design's PostgreSQL fallback — one
 * conditional `UPDATE … SET sold = sold + 1 WHERE sold < cap` plus the order insert, one statement,
 * no per-customer limit, no idempotency, no holds) vs dibs `sales.buy` (limit, idempotency key,
 * lazy hold expiry, sold-out event, all under the sale row lock), in one run, on one hot sale.
 * Then the refusals after the sell-out (answered without the row lock) and hold + confirm.
 *
 *   npm run bench -- sales-postgres
 *   BENCH_SALE_BUYS=5000 BENCH_SALE_CONNECTIONS=16 npm run bench -- sales-postgres
 *
 * Everything runs in throw-away schemas that are dropped at the end.
 */
import pg from 'pg';
import { openDibs, type Dibs } from '../src/index.js';
import { printTable, summarise, timeOps, type RunStats } from './lib/measure.js';

const URL_BASE = process.env.BENCH_PG_URL ?? process.env.DIBS_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const BUYS = Number(process.env.BENCH_SALE_BUYS ?? 5000);
const CONNECTIONS = Number(process.env.BENCH_SALE_CONNECTIONS ?? 16);
const HOUR = 3_600_000;

const RAW_SCHEMA = `
  CREATE TABLE raw_sales (id integer PRIMARY KEY, cap integer NOT NULL, sold integer NOT NULL DEFAULT 0);
  CREATE TABLE raw_orders (id bigserial PRIMARY KEY, sale_id integer NOT NULL, customer text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());`;
const RAW_BUY = `WITH s AS (UPDATE raw_sales SET sold = sold + 1 WHERE id = 1 AND sold < cap RETURNING id)
  INSERT INTO raw_orders (sale_id, customer) SELECT id, $1 FROM s RETURNING id`;

function storeUrl(schema: string): string {
  const url = new URL(URL_BASE);
  url.searchParams.set('schema', schema);
  url.searchParams.set('poolSize', String(CONNECTIONS));
  return url.href;
}

async function admin(sql: string, values: unknown[] = []): Promise<void> {
  const client = new pg.Client({ connectionString: URL_BASE });
  await client.connect();
  try {
    await client.query(sql, values);
  } finally {
    await client.end();
  }
}

async function runRaw(schema: string): Promise<RunStats> {
  await admin(`CREATE SCHEMA ${schema}; SET search_path = ${schema}; ${RAW_SCHEMA} INSERT INTO raw_sales (id, cap) VALUES (1, ${BUYS});`);
  const pool = new pg.Pool({ connectionString: URL_BASE, max: CONNECTIONS, options: `-c search_path=${schema}` });
  try {
    let sold = 0;
    const run = await timeOps(BUYS, CONNECTIONS, async (i) => {
      const { rows } = await pool.query({ name: 'raw_buy', text: RAW_BUY, values: [`user-${i}`] });
      sold += rows.length;
    });
    if (sold !== BUYS) throw new Error(`raw sold ${sold} of ${BUYS}`);
    return summarise(`raw conditional UPDATE + order, ${CONNECTIONS} connections`, run.latencies, run.seconds);
  } finally {
    await pool.end();
  }
}

async function newSale(dibs: Dibs, sku: string, cap: number) {
  return dibs.sales.create({ sku, startsAt: new Date().toISOString(), endsAt: new Date(Date.now() + HOUR).toISOString(), cap, perCustomerLimit: 1 });
}

async function runDibs(schema: string): Promise<RunStats[]> {
  const dibs = await openDibs(storeUrl(schema));
  try {
    const sale = await newSale(dibs, 'BENCH-BUY', BUYS);
    const buys = await timeOps(BUYS, CONNECTIONS, (i) => dibs.sales.buy(sale.id, `user-${i}`, 1, i % 2 === 0 ? { idempotencyKey: `k-${i}` } : {}));
    const audit = await dibs.sales.audit(sale.id);
    if ((await dibs.sales.get(sale.id)).stats.sold !== BUYS || audit.length) throw new Error(`dibs sold wrong or audit failed: ${JSON.stringify(audit)}`);
    const refusals = await timeOps(BUYS, CONNECTIONS, async (i) => {
      await dibs.sales.buy(sale.id, `late-${i}`).then(() => { throw new Error('sold past the cap'); }, (error: { code?: string }) => {
        if (error.code !== 'sold_out') throw error;
      });
    });
    const holdSale = await newSale(dibs, 'BENCH-HOLD', BUYS);
    const holds = await timeOps(BUYS, CONNECTIONS, async (i) => {
      const { hold } = await dibs.sales.reserve(holdSale.id, `user-${i}`, 1, 60_000);
      await dibs.sales.confirm(hold.id);
    });
    if ((await dibs.sales.audit(holdSale.id)).length) throw new Error('hold audit failed');
    return [
      summarise(`dibs sales.buy (half keyed), ${CONNECTIONS} connections`, buys.latencies, buys.seconds),
      summarise('dibs sales.buy after the sell-out (sold_out answers)', refusals.latencies, refusals.seconds),
      summarise('dibs reserve + confirm (2 steps per op)', holds.latencies, holds.seconds),
    ];
  } finally {
    await dibs.close();
  }
}

export async function main(): Promise<void> {
  const tag = `${process.pid}_${Date.now().toString(36)}`;
  const rawSchema = `bench_sale_raw_${tag}`;
  const dibsSchema = `bench_sale_dibs_${tag}`;
  try {
    const raw = await runRaw(rawSchema);
    const rows = await runDibs(dibsSchema);
    printTable(`PostgreSQL flash-sale buys on one hot sale (${BUYS} ops per run)`, [raw, ...rows], raw);
  } finally {
    await admin(`DROP SCHEMA IF EXISTS ${rawSchema} CASCADE; DROP SCHEMA IF EXISTS ${dibsSchema} CASCADE`);
  }
}
