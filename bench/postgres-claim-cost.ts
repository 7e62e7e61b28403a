/**
 * What one PostgreSQL single claim costs the server, apart from the commit flush and the client:
 * claim-fast.sql (and variants of it) against the raw SKIP LOCKED statement, each run in a loop
 * inside the server (statement + COMMIT per claim, synchronous_commit off for this measurement
 * only), rounds interleaved; then the WAL each statement writes (EXPLAIN (ANALYZE, WAL)).
 *
 *   node --import tsx bench/postgres-claim-cost.ts
 * env: COST_TREES  comma-separated repo roots whose schema (migrations) and claim-fast.sql to compare
 *                  (default: this tree); COST_VARIANTS  comma-separated statement edits (see VARIANTS);
 *      COST_CODES codes per pool (60000), COST_LOOP claims per loop (1000), COST_ROUNDS (5),
 *      COST_EXPLAIN statements explained per side (300);
 *      COST_THROUGHPUT claims per round through each tree's pools.claim and the raw statement at
 *      16 connections, rounds interleaved (0: none; then only the as-is variant is used).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import { timeOps } from './lib/measure.js';
import { loadNow, spread } from './lib/rounds.js';
import { RAW_CLAIM, RAW_SCHEMA } from './lib/raw-claim.js';

const URL_BASE = process.env.BENCH_PG_URL ?? process.env.DIBS_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const TREES = (process.env.COST_TREES ?? resolve(import.meta.dirname, '..')).split(',');
const VARIANTS_WANTED = (process.env.COST_VARIANTS ?? 'as-is').split(',');
const CODES = Number(process.env.COST_CODES ?? 60_000);
const LOOP = Number(process.env.COST_LOOP ?? 1000);
const ROUNDS = Number(process.env.COST_ROUNDS ?? 5);
const EXPLAINED = Number(process.env.COST_EXPLAIN ?? 300);
const THROUGHPUT = Number(process.env.COST_THROUGHPUT ?? 0);
const CONNECTIONS = 16;

/** Edits of the fast statement (and of its schema), to price one piece of it at a time. */
const noUnpark = (s: string) => s.replace(/unpark_due\(id\)/, '0');
const noCounter = (s: string) =>
  s.replace(
    /UPDATE pool_counters pc SET[\s\S]*?RETURNING 1/,
    'SELECT 1 FROM p WHERE EXISTS (SELECT 1 FROM picked WHERE picked.id IS NOT NULL)',
  );
const VARIANTS: Record<string, { sql: (sql: string) => string; ddl?: string; ddlBeforeImport?: string }> = {
  'fillfactor-90': { sql: (s) => s, ddlBeforeImport: 'ALTER TABLE codes SET (fillfactor = 90)' },
  'fillfactor-100': { sql: (s) => s, ddlBeforeImport: 'ALTER TABLE codes SET (fillfactor = 100)' },
  'as-is': { sql: (s) => s },
  'no-unpark': { sql: noUnpark },
  precheck: {
    sql: (s) =>
      s.replace(
        /unpark_due\(id\) AS unparked/,
        `CASE WHEN EXISTS (SELECT 1 FROM codes c WHERE c.pool_id = pools.id AND c.parked_until IS NOT NULL AND c.parked_until <= now())
            OR EXISTS (SELECT 1 FROM codes c WHERE c.pool_id = pools.id AND c.status = 'free' AND c.parked_until IS NULL AND c.expires_at IS NOT NULL AND c.expires_at <= now())
          THEN unpark_due(id) ELSE 0 END AS unparked`,
      ),
  },
  'no-key-cte': { sql: (s) => s.replace(/,\s*key_row AS \([\s\S]*?\n\)\n/, '\n') },
  'no-unpark-no-key-cte': { sql: (s) => noUnpark(s).replace(/,\s*key_row AS \([\s\S]*?\n\)\n/, '\n') },
  'no-claimed-at': { sql: (s) => s.replace('claimed_at = now()', 'claimed_at = NULL') },
  'no-claimed-at-index': { sql: (s) => s, ddl: 'DROP INDEX codes_claimed_at' },
  'no-counter': { sql: noCounter },
  'no-code-open': { sql: (s) => s.replaceAll(/AND code_open\(c\.hold_until, c\.starts_at, c\.expires_at\) /g, '') },
  'no-trigger': { sql: (s) => s, ddl: 'DROP TRIGGER codes_park_update ON codes' },
  'no-window-indexes': {
    sql: noUnpark,
    ddl: 'DROP INDEX codes_parked; DROP INDEX codes_free_expiring; DROP INDEX codes_claim_key',
  },
  bare: {
    sql: (s) => noCounter(noUnpark(s)),
    ddl: 'DROP TRIGGER codes_park_update ON codes; DROP INDEX codes_parked; DROP INDEX codes_free_expiring; DROP INDEX codes_claim_key; DROP INDEX codes_claimed_at',
  },
};

interface Side {
  label: string;
  schema: string;
  /** The statement with $1 pool, $2 claimant, $3 random, $4 slot, $5 key. */
  sql: string;
  pool: string;
}

/** The fast statement's text, without its header comments and the name line. */
function fastStatement(tree: string): string {
  const text = readFileSync(resolve(tree, 'src/backends/postgres/claim-fast.sql'), 'utf8');
  return text
    .split('\n')
    .filter((l) => !l.trimStart().startsWith('--'))
    .join('\n')
    .replace(/;\s*$/, '');
}

/** The statement as plpgsql: parameters become the loop's variables. */
function asPlpgsql(sql: string): string {
  return sql
    .replaceAll('$1', 'v_pool')
    .replaceAll('$2', 'v_claimant')
    .replaceAll('$3', 'v_rnd')
    .replaceAll('$4', 'v_slot')
    .replaceAll('$5', 'v_key')
    .replace(/SELECT t\.code FROM taken t\s*$/, 'SELECT t.code INTO v_code FROM taken t')
    .replace(/RETURNING code\s*$/, 'RETURNING code INTO v_code');
}

async function session(schema: string): Promise<pg.Client> {
  const client = new pg.Client({
    connectionString: URL_BASE,
    options: `-c search_path=${schema} -c plan_cache_mode=force_generic_plan -c synchronous_commit=off`,
  });
  await client.connect();
  return client;
}

async function main(): Promise<void> {
  const tag = `pgcost_${process.pid}`;
  const admin = new pg.Client({ connectionString: URL_BASE });
  await admin.connect();
  const sides: Side[] = [];
  const schemas: string[] = [];
  const closers: (() => Promise<void>)[] = [];
  const claimers: { label: string; claim: (claimant: string) => Promise<unknown> }[] = [];
  try {
    for (const [t, tree] of TREES.entries()) {
      const { openDibs } = (await import(
        pathToFileURL(resolve(tree, 'src/index.ts')).href
      )) as typeof import('../src/index.js');
      for (const [v, variant] of VARIANTS_WANTED.entries()) {
        const edit = VARIANTS[variant];
        if (!edit) throw new Error(`unknown variant ${variant}`);
        const schema = `${tag}_t${t}_v${v}`;
        schemas.push(schema);
        const url = new URL(URL_BASE);
        url.searchParams.set('schema', schema);
        url.searchParams.set('grouped', 'false');
        url.searchParams.set('poolSize', String(CONNECTIONS));
        const dibs = await openDibs(url.href);
        closers.push(() => dibs.close());
        const pool = `v-${variant}`;
        if (edit.ddlBeforeImport)
          await admin.query(`SET search_path = ${schema}; ${edit.ddlBeforeImport}; RESET search_path`);
        await dibs.pools.create({ name: pool });
        await dibs.pools.importCodes(
          pool,
          (function* () {
            for (let i = 0; i < CODES; i++) yield `${variant}-${i.toString(36)}-${(i * 7919).toString(36)}`;
          })(),
        );
        if (edit.ddl) await admin.query(`SET search_path = ${schema}; ${edit.ddl}; RESET search_path`);
        await admin.query(`VACUUM ANALYZE ${schema}.codes`);
        sides.push({ label: `t${t} ${variant}`, schema, sql: edit.sql(fastStatement(tree)), pool });
        claimers.push({ label: `t${t} ${variant}`, claim: (claimant) => dibs.pools.claim(pool, claimant) });
      }
    }
    const rawSchema = `${tag}_raw`;
    schemas.push(rawSchema);
    await admin.query(`CREATE SCHEMA ${rawSchema}; SET search_path = ${rawSchema}; ${RAW_SCHEMA}`);
    await admin.query(`INSERT INTO raw_codes (code) SELECT 'RAW-' || g FROM generate_series(1, $1) AS g`, [CODES]);
    await admin.query(`VACUUM ANALYZE ${rawSchema}.raw_codes`);
    await admin.query(`RESET search_path`);
    sides.unshift({
      label: 'raw',
      schema: rawSchema,
      sql: RAW_CLAIM.replace('$2', '$3').replace('$1', '$2'),
      pool: '',
    });
    await admin.query('CHECKPOINT');

    if (THROUGHPUT > 0) {
      const rawPool = new pg.Pool({
        connectionString: URL_BASE,
        max: CONNECTIONS,
        options: `-c search_path=${rawSchema}`,
      });
      closers.push(() => rawPool.end());
      const rates = new Map<string, number[]>([
        ['raw', []],
        ...claimers.map((c) => [c.label, []] as [string, number[]]),
      ]);
      const load = loadNow();
      for (let round = 0; round < ROUNDS; round++) {
        const raw = await timeOps(THROUGHPUT, CONNECTIONS, (i) =>
          rawPool.query({ name: 'raw', text: RAW_CLAIM, values: [`tp${round}-${i}`, Math.random()] }),
        );
        rates.get('raw')!.push(THROUGHPUT / raw.seconds);
        for (const c of claimers) {
          const run = await timeOps(THROUGHPUT, CONNECTIONS, (i) => c.claim(`tp${round}-${i}`));
          rates.get(c.label)!.push(THROUGHPUT / run.seconds);
        }
      }
      console.log(
        `claims/s at ${CONNECTIONS} connections, ${ROUNDS} interleaved rounds of ${THROUGHPUT}, load ${load} → ${loadNow()}`,
      );
      const rawRates = rates.get('raw')!;
      for (const [label, values] of rates) {
        const s = spread(values);
        const r = spread(values.map((v, i) => v / rawRates[i]!));
        console.log(
          `  ${label.padEnd(24)} median ${s.median.toFixed(0)} (${s.min.toFixed(0)}–${s.max.toFixed(0)})  vs raw same round ${r.median.toFixed(2)}× (${r.min.toFixed(2)}–${r.max.toFixed(2)}×)`,
        );
      }
      return;
    }

    const perClaim = new Map<string, number[]>(sides.map((s) => [s.label, []]));
    const load = loadNow();
    for (let round = 0; round < ROUNDS; round++) {
      for (const side of sides) {
        const client = await session(side.schema);
        try {
          const body = asPlpgsql(side.sql);
          const started = performance.now();
          await client.query(`DO $$
            DECLARE v_pool text := '${side.pool}'; v_claimant text; v_rnd float8; v_slot int; v_key text := NULL; v_code text;
            BEGIN
              FOR i IN 1..${LOOP} LOOP
                v_claimant := 'r${round}-' || i; v_rnd := random(); v_slot := i % 64;
                ${body};
                COMMIT;
              END LOOP;
            END $$`);
          perClaim.get(side.label)!.push(((performance.now() - started) * 1000) / LOOP);
        } finally {
          await client.end();
        }
      }
    }
    console.log(
      `server loop, µs per claim (statement + commit, no flush wait), ${ROUNDS} rounds of ${LOOP}, load ${load} → ${loadNow()}`,
    );
    for (const [label, values] of perClaim) {
      const s = spread(values);
      console.log(`  ${label.padEnd(24)} median ${s.median.toFixed(0)}  (${s.min.toFixed(0)}–${s.max.toFixed(0)})`);
    }

    console.log(`per statement, EXPLAIN (ANALYZE, WAL) of ${EXPLAINED} claims each, interleaved, after a CHECKPOINT:`);
    await admin.query('CHECKPOINT');
    const explained = await Promise.all(
      sides.map(async (side) => {
        const client = await session(side.schema);
        const raw = side.label === 'raw';
        await client.query(
          `PREPARE claim ${raw ? '(text, float8)' : '(text, text, float8, int, text)'} AS ${raw ? RAW_CLAIM : side.sql}`,
        );
        return { side, client, records: 0, fpi: 0, bytes: 0, exec: [] as number[] };
      }),
    );
    try {
      for (let i = 0; i < EXPLAINED; i++) {
        for (const e of explained) {
          const args =
            e.side.label === 'raw'
              ? `'w${i}', ${Math.random()}`
              : `'${e.side.pool}', 'w${i}', ${Math.random()}, ${i % 64}, NULL`;
          const { rows } = await e.client.query(`EXPLAIN (ANALYZE, WAL, FORMAT JSON) EXECUTE claim(${args})`);
          const plan = rows[0]['QUERY PLAN'][0];
          e.records += plan.Plan['WAL Records'] ?? 0;
          e.fpi += plan.Plan['WAL FPI'] ?? 0;
          e.bytes += plan.Plan['WAL Bytes'] ?? 0;
          e.exec.push(plan['Execution Time'] * 1000);
        }
      }
      for (const e of explained) {
        const x = spread(e.exec);
        const q = (f: number) => [...e.exec].sort((m, n) => m - n)[Math.floor(f * e.exec.length)]!;
        console.log(
          `  ${e.side.label.padEnd(24)} WAL records ${(e.records / EXPLAINED).toFixed(2)}  FPI ${(e.fpi / EXPLAINED).toFixed(2)}  bytes ${(e.bytes / EXPLAINED).toFixed(0)}  exec median ${x.median.toFixed(0)} µs (p25–p75 ${q(0.25).toFixed(0)}–${q(0.75).toFixed(0)})`,
        );
      }
    } finally {
      for (const e of explained) await e.client.end();
    }
  } finally {
    for (const close of closers) await close().catch(() => {});
    for (const schema of schemas) await admin.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await admin.end();
  }
}

await main();
