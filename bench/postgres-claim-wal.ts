/**
 * The WAL one PostgreSQL claim writes, per relation and record type: the raw SKIP LOCKED statement
 * and dibs' single claim (claim-fast.sql), 16 connections each, right after a CHECKPOINT, read back
 * with pg_walinspect (PostgreSQL 15+, installed in a scratch database that is dropped afterwards).
 * Commits wait on the WAL flush at 16 connections, so the bytes a claim writes — full-page images
 * most of all — bound its throughput.
 *
 *   node --import tsx bench/postgres-claim-wal.ts     (env N codes per side, 200000; CLAIMS, 3000;
 *                                                      FF: a fillfactor for dibs' codes table)
 */
import pg from 'pg';
import { openDibs } from '../src/index.js';
import { timeOps } from './lib/measure.js';
const base = process.env.BENCH_PG_URL ?? process.env.DIBS_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const tag = `pgfpi_${process.pid}`;
const N = Number(process.env.N ?? 200000),
  CLAIMS = Number(process.env.CLAIMS ?? 3000);
const admin = new pg.Client({ connectionString: base });
await admin.connect();
await admin.query(`CREATE DATABASE ${tag}_wal`);
const walUrl = new URL(base);
walUrl.pathname = `/${tag}_wal`;
const wal = new pg.Client({ connectionString: walUrl.href });
await wal.connect();
await wal.query('CREATE EXTENSION pg_walinspect');
const dibs = await openDibs(`${base}?schema=${tag}_d&grouped=false&poolSize=16`);
try {
  if (process.env.FF) await admin.query(`ALTER TABLE ${tag}_d.codes SET (fillfactor = ${process.env.FF})`);
  await dibs.pools.create({ name: 'p' });
  await dibs.pools.importCodes(
    'p',
    (function* () {
      for (let i = 0; i < N; i++) yield `p-${i.toString(36)}-${(i * 7919).toString(36)}`;
    })(),
  );
  await admin.query(`CREATE SCHEMA ${tag}_r; SET search_path = ${tag}_r;
    CREATE TABLE raw_codes (id bigserial PRIMARY KEY, code text NOT NULL UNIQUE, claimant text, rnd double precision NOT NULL DEFAULT random()) WITH (fillfactor = ${process.env.RAW_FF ?? 100});
    CREATE INDEX raw_codes_free ON raw_codes (rnd) WHERE claimant IS NULL;
    CREATE UNIQUE INDEX raw_codes_claimant ON raw_codes (claimant) WHERE claimant IS NOT NULL;`);
  await admin.query(`INSERT INTO raw_codes (code) SELECT 'RAW-' || g FROM generate_series(1, $1) AS g`, [N]);
  await admin.query(`VACUUM ANALYZE ${tag}_r.raw_codes`);
  await admin.query(`VACUUM ANALYZE ${tag}_d.codes`);
  const rawPool = new pg.Pool({ connectionString: base, max: 16, options: `-c search_path=${tag}_r` });
  const lsn = async () => (await admin.query('SELECT pg_current_wal_insert_lsn() AS l')).rows[0].l;
  await admin.query('CHECKPOINT');
  const l0 = await lsn();
  await timeOps(CLAIMS, 16, (i) =>
    rawPool.query({
      name: 'raw',
      text: `UPDATE raw_codes SET claimant = $1 WHERE id = (SELECT id FROM raw_codes WHERE claimant IS NULL AND rnd >= $2 ORDER BY rnd LIMIT 1 FOR UPDATE SKIP LOCKED) RETURNING code`,
      values: [`u${i}`, Math.random()],
    }),
  );
  const l1 = await lsn();
  await timeOps(CLAIMS, 16, (i) => dibs.pools.claim('p', `u${i}`));
  const l2 = await lsn();
  await rawPool.end();
  const rels = (
    await admin.query(
      `SELECT c.relfilenode::text AS f, n.nspname || '.' || c.relname AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname IN ('${tag}_r', '${tag}_d')`,
    )
  ).rows;
  const byFile = new Map(rels.map((r: { f: string; name: string }) => [r.f, r.name]));
  for (const [label, a, b] of [
    ['raw', l0, l1],
    ['dibs', l1, l2],
  ] as const) {
    const { rows } = await wal.query(
      `SELECT record_type, resource_manager, record_length, fpi_length, block_ref FROM pg_get_wal_records_info($1, $2)`,
      [a, b],
    );
    const per = new Map<string, { recs: number; fpi: number; bytes: number; fpiBytes: number }>();
    let _xacts = 0;
    let _mine = 0;
    for (const r of rows) {
      const m = /rel \d+\/\d+\/(\d+)/.exec(r.block_ref ?? '');
      const rel = m ? byFile.get(m[1]!) : undefined;
      if (r.resource_manager === 'Transaction') {
        _xacts++;
        continue;
      }
      if (!rel) continue;
      _mine++;
      const k = `${rel.split('.')[1]} ${r.resource_manager}/${r.record_type}`;
      const e = per.get(k) ?? { recs: 0, fpi: 0, bytes: 0, fpiBytes: 0 };
      e.recs++;
      e.bytes += r.record_length;
      e.fpiBytes += r.fpi_length;
      if (r.fpi_length > 0) e.fpi++;
      per.set(k, e);
    }
    console.log(`${label}: per claim (${CLAIMS} claims, ${N} codes, after a CHECKPOINT)`);
    let tb = 0,
      tf = 0,
      tr = 0;
    for (const [k, e] of [...per].sort()) {
      tb += e.bytes;
      tf += e.fpi;
      tr += e.recs;
      console.log(
        `  ${k.padEnd(50)} records ${(e.recs / CLAIMS).toFixed(2)} FPI ${(e.fpi / CLAIMS).toFixed(2)} bytes ${(e.bytes / CLAIMS).toFixed(0)}`,
      );
    }
    console.log(
      `  total: records ${(tr / CLAIMS).toFixed(2)} FPI ${(tf / CLAIMS).toFixed(2)} bytes ${(tb / CLAIMS).toFixed(0)}`,
    );
  }
} finally {
  await dibs.close();
  await admin.query(`DROP SCHEMA IF EXISTS ${tag}_r CASCADE; DROP SCHEMA IF EXISTS ${tag}_d CASCADE`);
  await wal.end();
  await admin.query(`DROP DATABASE IF EXISTS ${tag}_wal`);
  await admin.end();
}
