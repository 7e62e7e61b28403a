/**
 * Server CPU per claim of claim.sql by group size, for one or more trees' claim.sql: one backend
 * runs the statement for g claimants (half of them keyed) in a transaction it rolls back, batches
 * alternating between the trees; the cost is the backend's utime + stime from /proc (not inflated
 * by waiting for a core, unlike EXPLAIN's times on a loaded machine), BEGIN and ROLLBACK included.
 *
 *   node --import tsx bench/postgres-claim-group-cpu.ts
 * env: GROUP_CPU_TREES comma-separated repo roots (default: this tree; the first one's migrations
 *      make the schema), GROUP_CPU_SIZES (16,64,128), GROUP_CPU_CLAIMS claims per batch (4000),
 *      GROUP_CPU_BATCHES per tree and size (5). The database must be on this machine (/proc).
 */
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import type { Dibs } from '../src/index.js';
import { spread } from './lib/rounds.js';

const URL_BASE = process.env.BENCH_PG_URL ?? process.env.DIBS_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const TREES = (process.env.GROUP_CPU_TREES ?? resolve(import.meta.dirname, '..')).split(',');
const SIZES = (process.env.GROUP_CPU_SIZES ?? '16,64,128').split(',').map(Number);
const CLAIMS = Number(process.env.GROUP_CPU_CLAIMS ?? 4000);
const BATCHES = Number(process.env.GROUP_CPU_BATCHES ?? 5);
const USEC_PER_TICK = 10_000; // USER_HZ 100

async function main() {
  const schema = `bench_group_cpu_${process.pid}`;
  const { openDibs } = await import(pathToFileURL(resolve(TREES[0]!, 'src/index.ts')).href);
  const url = new URL(URL_BASE);
  url.searchParams.set('schema', schema);
  url.searchParams.set('poolSize', '2');
  const dibs: Dibs = await openDibs(url.href);
  const client = new pg.Client({
    connectionString: URL_BASE,
    options: `-c search_path=${schema} -c plan_cache_mode=force_generic_plan`,
  });
  await client.connect();
  try {
    const codes = 100_000;
    await dibs.pools.create({ name: 'p' });
    await dibs.pools.importCodes(
      'p',
      (function* () {
        for (let i = 0; i < codes; i++) yield `C-${i}`;
      })(),
    );
    await dibs.close();
    const pid = (await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]!.pid;
    const ticks = () => {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      return Number(fields[11]) + Number(fields[12]);
    };
    const statements = TREES.map((root) => readFileSync(resolve(root, 'src/backends/postgres/claim.sql'), 'utf8'));
    for (const g of SIZES) {
      const per = Math.max(5, Math.round(CLAIMS / g));
      await client.query('VACUUM ANALYZE codes');
      const cost: number[][] = TREES.map(() => []);
      for (let b = 0; b < BATCHES; b++)
        for (const t of TREES.keys()) {
          const started = ticks();
          for (let k = 0; k < per; k++) {
            const claimants = Array.from({ length: g }, (_, i) => `x${b}-${k}-${i}-${Math.random()}`);
            const keys = claimants.map((_, i) => (i % 2 ? `k${Math.random()}` : null));
            await client.query('BEGIN');
            const { rows } = await client.query<{ taken: string[] }>({
              name: `claim${t}`,
              text: statements[t]!,
              values: ['p', claimants, keys, claimants.map(() => 1), Math.random(), Math.random(), false],
            });
            await client.query('ROLLBACK');
            if (rows.filter((r) => r.taken.length === 1).length !== g)
              throw new Error(`tree ${t}: not every claim took`);
          }
          cost[t]!.push(((ticks() - started) * USEC_PER_TICK) / (per * g));
        }
      console.log(
        `g=${g} (${per} statements × ${BATCHES} batches a tree): ` +
          TREES.map((root, t) => {
            const s = spread(cost[t]!);
            return `${root}: ${s.median.toFixed(0)} µs/claim (${s.min.toFixed(0)}–${s.max.toFixed(0)})`;
          }).join(' | '),
      );
    }
  } finally {
    await dibs.close().catch(() => {});
    await client.query(`DROP SCHEMA IF EXISTS ${schema} CASCADE`).catch(() => {});
    await client.end();
  }
}

await main();
