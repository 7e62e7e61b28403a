/**
 * Headlines: PostgreSQL claims (single statements and grouped, vs the raw SKIP LOCKED statement)
 * and the import of a pool's codes. The same statements and settings as bench/postgres.ts, but
 * every pool is filled once and every round takes its claims from it, so rounds interleave.
 */
import pg from 'pg';
import { openDibs, type Dibs } from '../../src/index.js';
import { summarise, timeOps } from '../lib/measure.js';
import { figure, interleave, loadNow, perSecond, ratio, type Ratio } from '../lib/rounds.js';
import type { Sizes } from './sizes.js';
import { RAW_CLAIM, RAW_CLAIM_WRAP, RAW_SCHEMA } from '../lib/raw-claim.js';

const URL_BASE = process.env.BENCH_PG_URL ?? process.env.DIBS_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const CONNECTIONS = 16;

const codes = function* (prefix: string, n: number) {
  for (let i = 0; i < n; i++) yield `${prefix}-${i.toString(36)}-${(i * 7919).toString(36)}`;
};

export async function postgresClaims(sizes: Sizes): Promise<Ratio[]> {
  const tag = `bench_sum_${process.pid}_${Date.now().toString(36)}`;
  const admin = new pg.Client({ connectionString: URL_BASE });
  await admin.connect();
  const opened: Dibs[] = [];
  let pool: pg.Pool | undefined;
  try {
    const open = async (params: Record<string, string>) => {
      const url = new URL(URL_BASE);
      url.searchParams.set('schema', `${tag}_dibs`);
      url.searchParams.set('poolSize', String(CONNECTIONS));
      for (const [k, v] of Object.entries(params)) url.searchParams.set(k, v);
      const dibs = await openDibs(url.href);
      opened.push(dibs);
      return dibs;
    };
    const single = await open({ grouped: 'false' });
    const grouped = await open({ grouped: 'true' });
    // Import: a fresh pool per round (its own figure); the last round's pool is not kept.
    const imports: number[] = [];
    const importLoad = loadNow();
    for (let r = 0; r < sizes.rounds; r++) {
      await single.pools.create({ name: `import-${r}` });
      const started = performance.now();
      await single.pools.importCodes(`import-${r}`, codes(`IMP${r}`, sizes.importCodes));
      imports.push((performance.now() - started) / 1000);
      await single.pools.delete(`import-${r}`);
    }
    const rows: Ratio[] = [
      figure(
        `PostgreSQL import of ${sizes.importCodes.toLocaleString('en-US')} codes`,
        '1M ≤ 10 s',
        's',
        imports,
        `${importLoad} → ${loadNow()}`,
      ),
    ];

    // The claim pools: enough codes for every round of every side.
    const need = sizes.rounds * sizes.claims + 1000;
    await admin.query(`CREATE SCHEMA ${tag}_raw; SET search_path = ${tag}_raw; ${RAW_SCHEMA}`);
    await admin.query(`INSERT INTO raw_codes (code) SELECT 'RAW-' || g FROM generate_series(1, $1) AS g`, [need]);
    await admin.query(`VACUUM ANALYZE raw_codes`);
    await admin.query('RESET search_path');
    for (const name of ['single', 'grouped16', 'grouped128']) {
      await single.pools.create({ name });
      await single.pools.importCodes(name, codes(name, need));
    }
    await admin.query(`VACUUM ANALYZE ${tag}_dibs.codes`);
    pool = new pg.Pool({ connectionString: URL_BASE, max: CONNECTIONS, options: `-c search_path=${tag}_raw` });
    const rawPool = pool;
    let round = 0;
    const claims = (dibs: Dibs, name: string, callers: number) => async () => {
      const r = round++;
      const run = await timeOps(sizes.claims, callers, (i) => dibs.pools.claim(name, `user-${r}-${i}`));
      return summarise(name, run.latencies, run.seconds);
    };
    const load = loadNow();
    const [raw, s, g16, g128] = await interleave(sizes.rounds, [
      {
        label: 'raw',
        run: async () => {
          const r = round++;
          const run = await timeOps(sizes.claims, CONNECTIONS, async (i) => {
            const { rows: got } = await rawPool.query({
              name: 'raw_claim',
              text: RAW_CLAIM,
              values: [`user-${r}-${i}`, Math.random()],
            });
            if (got.length === 0)
              await rawPool.query({ name: 'raw_claim_wrap', text: RAW_CLAIM_WRAP, values: [`user-${r}-${i}`] });
          });
          return summarise('raw', run.latencies, run.seconds);
        },
      },
      { label: 'single', run: claims(single, 'single', CONNECTIONS) },
      { label: 'grouped16', run: claims(grouped, 'grouped16', CONNECTIONS) },
      { label: 'grouped128', run: claims(grouped, 'grouped128', 128) },
    ]);
    const during = `${load} → ${loadNow()}`;
    for (const name of ['single', 'grouped16', 'grouped128']) {
      const audit = await single.pools.audit(name);
      if (audit.length > 0) throw new Error(`audit of ${name}: ${JSON.stringify(audit.slice(0, 3))}`);
    }
    rows.push(
      ratio(
        'PostgreSQL single claims vs raw SKIP LOCKED, 16 connections',
        '≥ 0.9×',
        'claims/s',
        raw!,
        s!,
        perSecond,
        during,
      ),
      ratio('PostgreSQL grouped claims vs raw, 16 callers', '≥ 2×', 'claims/s', raw!, g16!, perSecond, during),
      ratio('PostgreSQL grouped claims vs raw, 128 callers', '≥ 4×', 'claims/s', raw!, g128!, perSecond, during),
    );
    return rows;
  } finally {
    await pool?.end().catch(() => {});
    for (const d of opened) await d.close().catch(() => {});
    await admin
      .query(`DROP SCHEMA IF EXISTS ${tag}_raw CASCADE; DROP SCHEMA IF EXISTS ${tag}_dibs CASCADE`)
      .catch(() => {});
    await admin.end();
  }
}
