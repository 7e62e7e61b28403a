/**
 * The shape of PostgreSQL grouped sale steps, reserve + confirm: group sizes, statements a second,
 * the time a grouped statement is in flight (call to rows, commit included) and Node CPU per op,
 * for one or more trees against the raw buy (bench/sales-postgres.ts' baseline: one conditional
 * UPDATE + order insert per buy), rounds interleaved (raw, tree 1, tree 2, raw, …), each run on a
 * fresh sale.
 *
 *   node --import tsx bench/postgres-sale-shape.ts
 * env: SALE_TREES  comma-separated repo roots (default: this tree), each with its own schema and
 *                  its own src/ (loaded by path); a root may carry store URL parameters of its own
 *                  (`/path/to/tree?groupMax=24`); SALE_CALLERS (16), SALE_OPS per run (1500),
 *      SALE_ROUNDS (3)
 */
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import type { Dibs } from '../src/index.js';
import { timeOps } from './lib/measure.js';
import { loadNow, spread } from './lib/rounds.js';

const URL_BASE = process.env.BENCH_PG_URL ?? process.env.DIBS_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const TREES = (process.env.SALE_TREES ?? resolve(import.meta.dirname, '..')).split(',');
const CALLERS = Number(process.env.SALE_CALLERS ?? 16);
const OPS = Number(process.env.SALE_OPS ?? 1500);
const ROUNDS = Number(process.env.SALE_ROUNDS ?? 3);
const CONNECTIONS = 16;

const RAW_SCHEMA = `
  CREATE TABLE raw_sales (id integer PRIMARY KEY, cap integer NOT NULL, sold integer NOT NULL DEFAULT 0);
  CREATE TABLE raw_orders (id bigserial PRIMARY KEY, sale_id integer NOT NULL, customer text NOT NULL, created_at timestamptz NOT NULL DEFAULT now());`;
const RAW_BUY = `WITH s AS (UPDATE raw_sales SET sold = sold + 1 WHERE id = $1 AND sold < cap RETURNING id)
  INSERT INTO raw_orders (sale_id, customer) SELECT id, $2 FROM s RETURNING id`;

/** Where the patched SaleGrouper.runSteps records (the tree being measured). */
let recording: { sizes: number[]; inFlightMs: number } | null = null;

interface Run {
  opsPerS: number;
  sizes: number[];
  inFlightMs: number;
  nodeCpuUsPerOp: number;
  seconds: number;
}

async function main() {
  const tag = `sale_shape_${process.pid}`;
  const admin = new pg.Client({ connectionString: URL_BASE });
  await admin.connect();
  const closers: (() => Promise<unknown>)[] = [];
  const schemas = [`${tag}_raw`, ...TREES.map((_, t) => `${tag}_t${t}`)];
  try {
    await admin.query(`CREATE SCHEMA ${tag}_raw; SET search_path = ${tag}_raw; ${RAW_SCHEMA}; RESET search_path`);
    const raw = new pg.Pool({ connectionString: URL_BASE, max: CONNECTIONS, options: `-c search_path=${tag}_raw` });
    closers.push(() => raw.end());
    const trees: { label: string; dibs: Dibs }[] = [];
    const patched = new Set<unknown>();
    for (const [t, tree] of TREES.entries()) {
      const [root, params] = tree.split('?') as [string, string | undefined];
      const mod = await import(pathToFileURL(resolve(root, 'src/index.ts')).href);
      const grouper = await import(pathToFileURL(resolve(root, 'src/backends/postgres/sale-grouper.ts')).href);
      const proto = grouper.SaleGrouper.prototype;
      if (!patched.has(proto)) {
        patched.add(proto);
        const runSteps = proto.runSteps;
        proto.runSteps = function (this: unknown, sale: string, group: readonly unknown[]) {
          const into = recording;
          into?.sizes.push(group.length);
          const started = performance.now();
          const done: Promise<void> = runSteps.call(this, sale, group);
          return done.finally(() => {
            if (into) into.inFlightMs += performance.now() - started;
          });
        };
      }
      const url = new URL(URL_BASE);
      url.searchParams.set('schema', `${tag}_t${t}`);
      url.searchParams.set('poolSize', String(CONNECTIONS));
      for (const [k, v] of new URLSearchParams(params ?? '')) url.searchParams.set(k, v);
      const dibs: Dibs = await mod.openDibs(url.href);
      closers.push(() => dibs.close());
      trees.push({ label: `tree${t} ${tree}`, dibs });
    }
    let next = 0;
    const window = () => ({
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
    });
    const measure = async (op: (i: number) => Promise<unknown>): Promise<Run> => {
      const into = { sizes: [] as number[], inFlightMs: 0 };
      recording = into;
      const cpu = process.cpuUsage();
      const run = await timeOps(OPS, CALLERS, op);
      const used = process.cpuUsage(cpu);
      recording = null;
      return {
        opsPerS: OPS / run.seconds,
        sizes: into.sizes,
        inFlightMs: into.inFlightMs,
        nodeCpuUsPerOp: (used.user + used.system) / OPS,
        seconds: run.seconds,
      };
    };
    const sides: { label: string; run: () => Promise<Run> }[] = [
      {
        label: 'raw buy',
        run: async () => {
          const id = ++next;
          await raw.query('INSERT INTO raw_sales (id, cap) VALUES ($1, $2)', [id, OPS]);
          return measure((i) => raw.query({ name: 'raw_buy', text: RAW_BUY, values: [id, `u${id}-${i}`] }));
        },
      },
      ...trees.map((tree) => ({
        label: `${tree.label} reserve+confirm`,
        run: async () => {
          const sale = await tree.dibs.sales.create({ sku: `s${++next}`, cap: OPS, perCustomerLimit: 1, ...window() });
          return measure(async (i) => {
            const { hold } = await tree.dibs.sales.reserve(sale.id, `u${next}-${i}`, 1, 60_000);
            await tree.dibs.sales.confirm(hold.id);
          });
        },
      })),
    ];
    // warm-up, untimed
    for (const side of sides) await side.run();
    const load = loadNow();
    const runs = sides.map(() => [] as Run[]);
    for (let r = 0; r < ROUNDS; r++)
      for (const [s, side] of sides.entries()) {
        const m = await side.run();
        runs[s]!.push(m);
        console.log(`${side.label}: ${Math.round(m.opsPerS)} ops/s`);
      }
    console.log(`\n${OPS} ops per run, ${CALLERS} callers, ${ROUNDS} rounds; load ${load} → ${loadNow()}`);
    const f = (values: number[], d = 0) => {
      const s = spread(values);
      return `${s.median.toFixed(d)} (${s.min.toFixed(d)}–${s.max.toFixed(d)})`;
    };
    for (const [s, side] of sides.entries()) {
      const mine = runs[s]!;
      const ratios = mine.map((m, r) => m.opsPerS / runs[0]![r]!.opsPerS);
      console.log(`\n${side.label}`);
      console.log(`  ops/s ${f(mine.map((m) => m.opsPerS))}, vs raw buy ${f(ratios, 2)}×`);
      console.log(`  Node CPU µs/op ${f(mine.map((m) => m.nodeCpuUsPerOp))}`);
      const sizes = mine.flatMap((m) => m.sizes);
      if (sizes.length === 0) continue;
      const hist = new Map<number, number>();
      for (const g of sizes) hist.set(g, (hist.get(g) ?? 0) + 1);
      console.log(
        `  statements/s ${f(mine.map((m) => m.sizes.length / m.seconds))}, ms per statement ${f(
          mine.map((m) => m.inFlightMs / m.sizes.length),
          2,
        )}, in flight ${f(
          mine.map((m) => m.inFlightMs / 1000 / m.seconds),
          2,
        )}; group sizes ${[...hist]
          .sort((a, b) => a[0] - b[0])
          .map(([g, n]) => `${g}×${n}`)
          .join(' ')}`,
      );
    }
  } finally {
    for (const close of closers.reverse()) await close().catch(() => {});
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await admin.end();
  }
}

await main();
