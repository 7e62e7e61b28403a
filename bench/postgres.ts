/**
 * PostgreSQL: the raw baseline (the plain SKIP LOCKED claim statement through `pg`, 16 concurrent
 * connections, as a named prepared statement) vs dibs single claims vs dibs grouped claims, on
 * pools of BENCH_PG_CODES codes (default 1,000,000), in one run; plus the time dibs takes to
 * import 1M codes (COPY into staging, dedupe into the pool).
 *
 *   npm run bench -- postgres
 *   BENCH_PG_URL=postgres://root@127.0.0.1:5432/test BENCH_PG_CLAIMS=20000 npm run bench -- postgres
 *
 * Everything runs in a throw-away schema that is dropped at the end.
 */
import pg from 'pg';
import { openDibs } from '../src/index.js';
import { printTable, summarise, timeOps, type RunStats } from './lib/measure.js';
import { RAW_CLAIM, RAW_CLAIM_WRAP, RAW_SCHEMA } from './lib/raw-claim.js';

const URL_BASE = process.env.BENCH_PG_URL ?? process.env.DIBS_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const CODES = Number(process.env.BENCH_PG_CODES ?? 1_000_000);
const CLAIMS = Number(process.env.BENCH_PG_CLAIMS ?? 20_000);
const CONNECTIONS = Number(process.env.BENCH_PG_CONNECTIONS ?? 16);
/** In-flight claims for the grouped run: a busy service has many more requests than connections. */
const GROUPED_CALLERS = Number(process.env.BENCH_PG_GROUPED_CALLERS ?? 128);

function storeUrl(schema: string, params: Record<string, string>): string {
  const url = new URL(URL_BASE);
  url.searchParams.set('schema', schema);
  for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
  return url.href;
}

async function runRaw(schema: string): Promise<RunStats> {
  const admin = new pg.Client({ connectionString: URL_BASE });
  await admin.connect();
  await admin.query(`CREATE SCHEMA ${schema}; SET search_path = ${schema}; ${RAW_SCHEMA}`);
  await admin.query(`INSERT INTO raw_codes (code) SELECT 'RAW-' || g FROM generate_series(1, $1) AS g`, [CODES]);
  await admin.query(`VACUUM ANALYZE raw_codes`);
  await admin.end();
  const pool = new pg.Pool({ connectionString: URL_BASE, max: CONNECTIONS, options: `-c search_path=${schema}` });
  try {
    const run = await timeOps(CLAIMS, CONNECTIONS, async (i) => {
      const { rows } = await pool.query({ name: 'raw_claim', text: RAW_CLAIM, values: [`user-${i}`, Math.random()] });
      if (rows.length === 0) await pool.query({ name: 'raw_claim_wrap', text: RAW_CLAIM_WRAP, values: [`user-${i}`] });
    });
    return summarise(`raw SKIP LOCKED statement, ${CONNECTIONS} connections`, run.latencies, run.seconds);
  } finally {
    await pool.end();
  }
}

async function timeImport(schema: string): Promise<number> {
  const dibs = await openDibs(storeUrl(schema, {}));
  try {
    await dibs.pools.create({ name: 'import' });
    const started = performance.now();
    const result = await dibs.pools.importCodes(
      'import',
      (function* () {
        for (let i = 0; i < CODES; i++) yield `IMPORT-${i.toString(36)}-${(i * 7919).toString(36)}`;
      })(),
    );
    const seconds = (performance.now() - started) / 1000;
    if (result.imported !== CODES) throw new Error(`imported ${result.imported} of ${CODES}`);
    await dibs.pools.delete('import');
    return seconds;
  } finally {
    await dibs.close();
  }
}

async function runDibs(
  schema: string,
  label: string,
  grouped: boolean,
  callers: number,
  keyed = false,
): Promise<RunStats> {
  const dibs = await openDibs(storeUrl(schema, { poolSize: String(CONNECTIONS), grouped: String(grouped) }));
  try {
    const pool = `bench-${grouped ? 'grouped' : 'single'}-${callers}${keyed ? '-keyed' : ''}`;
    await dibs.pools.create({ name: pool });
    await dibs.pools.importCodes(
      pool,
      (function* () {
        for (let i = 0; i < CODES; i++) yield `DIBS-${i}`;
      })(),
    );
    const admin = new pg.Client({ connectionString: URL_BASE });
    await admin.connect();
    await admin.query(`VACUUM ANALYZE ${schema}.codes`);
    await admin.end();
    const run = await timeOps(CLAIMS, callers, (i) =>
      dibs.pools.claim(pool, `user-${i}`, keyed ? { idempotencyKey: `key-${i}` } : {}),
    );
    const audit = await dibs.pools.audit(pool);
    if (audit.length > 0) throw new Error(`audit after the run: ${JSON.stringify(audit.slice(0, 3))}`);
    await dibs.pools.delete(pool);
    return summarise(label, run.latencies, run.seconds);
  } finally {
    await dibs.close();
  }
}

export async function main(): Promise<void> {
  const schema = `bench_pg_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: URL_BASE });
  await admin.connect();
  try {
    console.log(
      `PostgreSQL ${(await admin.query('SHOW server_version')).rows[0].server_version}; ${CODES.toLocaleString('en-US')} codes per pool, ${CLAIMS.toLocaleString('en-US')} claims per run, ${CONNECTIONS} connections`,
    );
    const importSeconds = await timeImport(`${schema}_imp`);
    console.log(
      `\ndibs import of ${CODES.toLocaleString('en-US')} codes (COPY → staging → dedupe into the pool): ${importSeconds.toFixed(2)} s (${Math.round(CODES / importSeconds).toLocaleString('en-US')} codes/s)`,
    );
    const raw = await runRaw(`${schema}_raw`);
    const single = await runDibs(
      `${schema}_dibs`,
      `dibs claim, single statements, ${CONNECTIONS} callers`,
      false,
      CONNECTIONS,
    );
    const keyed = await runDibs(
      `${schema}_dibs`,
      `dibs claim with an idempotency key, single statements, ${CONNECTIONS} callers`,
      false,
      CONNECTIONS,
      true,
    );
    const grouped16 = await runDibs(`${schema}_dibs`, `dibs claim, grouped, ${CONNECTIONS} callers`, true, CONNECTIONS);
    const grouped = await runDibs(
      `${schema}_dibs`,
      `dibs claim, grouped, ${GROUPED_CALLERS} callers`,
      true,
      GROUPED_CALLERS,
    );
    printTable(
      `PostgreSQL claims on a ${CODES.toLocaleString('en-US')}-code pool, ${CONNECTIONS} connections (ratio vs raw)`,
      [raw, single, keyed, grouped16, grouped],
      raw,
    );
    console.log(
      `\nratio vs raw: single ${(single.perSecond / raw.perSecond).toFixed(2)}× (target ≥ 0.9×; with a key ${(keyed.perSecond / raw.perSecond).toFixed(2)}×), grouped ${(grouped.perSecond / raw.perSecond).toFixed(2)}× with ${GROUPED_CALLERS} callers, ${(grouped16.perSecond / raw.perSecond).toFixed(2)}× with ${CONNECTIONS} (target ≥ 2×)`,
    );
  } finally {
    for (const s of ['imp', 'raw', 'dibs'])
      await admin.query(`DROP SCHEMA IF EXISTS ${schema}_${s} CASCADE`).catch(() => {});
    await admin.end();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
