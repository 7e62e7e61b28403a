/**
 * Flash-sale buys on PostgreSQL: the raw baseline (the Rails design's PostgreSQL fallback — one
 * conditional `UPDATE … SET sold = sold + 1 WHERE sold < cap` plus the order insert, one statement,
 * no per-customer limit, no idempotency, no holds) vs dibs `sales.buy` (limit, idempotency key,
 * lazy hold expiry, sold-out event, all under the sale row lock; buyers of a sale waiting in the
 * process grouped into one statement) and dibs reserve + confirm, on one hot sale, at 16 and 128
 * callers in one process over 16 connections, as interleaved rounds (raw, buy, reserve + confirm,
 * raw, …) with the median and spread of the same-round ratios. Then the refusals after a sell-out.
 *
 *   npm run bench -- sales-postgres
 *   BENCH_SALE_BUYS=5000 BENCH_ROUNDS=5 npm run bench -- sales-postgres
 *
 * Everything runs in throw-away schemas that are dropped at the end.
 */
import pg from 'pg';
import { openDibs, type Dibs } from '../src/index.js';
import { summarise, timeOps } from './lib/measure.js';
import { dibsSaleSteps, runSaleBench, type SaleBench } from './lib/sale-bench.js';

const URL_BASE = process.env.BENCH_PG_URL ?? process.env.DIBS_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const BUYS = Number(process.env.BENCH_SALE_BUYS ?? 3000);
const CONNECTIONS = Number(process.env.BENCH_SALE_CONNECTIONS ?? 16);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 5);

const RAW_SCHEMA = `
  CREATE TABLE raw_sales (id integer PRIMARY KEY, cap integer NOT NULL, sold integer NOT NULL DEFAULT 0);
  CREATE TABLE raw_orders (id bigserial PRIMARY KEY, sale_id integer NOT NULL, customer text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());`;
const RAW_BUY = `WITH s AS (UPDATE raw_sales SET sold = sold + 1 WHERE id = $1 AND sold < cap RETURNING id)
  INSERT INTO raw_orders (sale_id, customer) SELECT id, $2 FROM s RETURNING id`;

async function admin(sql: string, values: unknown[] = []): Promise<void> {
  const client = new pg.Client({ connectionString: URL_BASE });
  await client.connect();
  try {
    await client.query(sql, values);
  } finally {
    await client.end();
  }
}

export async function openPgSaleBench(): Promise<SaleBench> {
  const tag = `${process.pid}_${Date.now().toString(36)}`;
  const rawSchema = `bench_sale_raw_${tag}`;
  const dibsSchema = `bench_sale_dibs_${tag}`;
  await admin(`CREATE SCHEMA ${rawSchema}; SET search_path = ${rawSchema}; ${RAW_SCHEMA}`);
  const pool = new pg.Pool({ connectionString: URL_BASE, max: CONNECTIONS, options: `-c search_path=${rawSchema}` });
  const url = new URL(URL_BASE);
  url.searchParams.set('schema', dibsSchema);
  url.searchParams.set('poolSize', String(CONNECTIONS));
  let dibs: Dibs;
  try {
    dibs = await openDibs(url.href);
  } catch (error) {
    await pool.end();
    await admin(`DROP SCHEMA IF EXISTS ${rawSchema} CASCADE; DROP SCHEMA IF EXISTS ${dibsSchema} CASCADE`);
    throw error;
  }
  const steps = dibsSaleSteps(dibs);
  // Warm-up (connections, prepared statements, JIT) on both sides, untimed.
  let next = 0;
  const warmRaw = ++next;
  await pool.query(`INSERT INTO raw_sales (id, cap) VALUES ($1, 200)`, [warmRaw]);
  await timeOps(200, CONNECTIONS, (i) =>
    pool.query({ name: 'raw_buy', text: RAW_BUY, values: [warmRaw, `warm-${i}`] }),
  );
  await steps.warm(CONNECTIONS);
  return {
    async rawBuy(callers, buys) {
      const id = ++next;
      await pool.query(`INSERT INTO raw_sales (id, cap) VALUES ($1, $2)`, [id, buys]);
      let sold = 0;
      const run = await timeOps(buys, callers, async (i) => {
        const { rows } = await pool.query({ name: 'raw_buy', text: RAW_BUY, values: [id, `user-${i}`] });
        sold += rows.length;
      });
      if (sold !== buys) throw new Error(`raw sold ${sold} of ${buys}`);
      return summarise(
        `raw conditional UPDATE + order, ${callers} callers, ${CONNECTIONS} connections`,
        run.latencies,
        run.seconds,
      );
    },
    ...steps,
    async close() {
      await dibs.close().catch(() => {});
      await pool.end().catch(() => {});
      await admin(`DROP SCHEMA IF EXISTS ${rawSchema} CASCADE; DROP SCHEMA IF EXISTS ${dibsSchema} CASCADE`);
    },
  };
}

export async function main(): Promise<void> {
  await runSaleBench(await openPgSaleBench(), {
    store: 'PostgreSQL',
    setting: `${CONNECTIONS} connections`,
    rounds: ROUNDS,
    buys: BUYS,
    refusalCallers: CONNECTIONS,
    refusalTitle: 'After the sell-out: refusals answered without the row lock (one run, vs the raw buy)',
  });
}
