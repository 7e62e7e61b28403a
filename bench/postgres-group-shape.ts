/**
 * The shape of PostgreSQL grouped claims: how many claims each grouped statement serves, how many
 * statements (= commits) a second, and where the time goes — Node CPU (process.cpuUsage), the
 * server's CPU (utime+stime of this run's backends and the WAL writer, from /proc) and the wait
 * events of this run's backends (pg_stat_activity sampled every 10 ms) — for one or more trees,
 * against the raw SKIP LOCKED statement, rounds interleaved (raw, tree 1, tree 2, raw, …).
 *
 *   node --import tsx bench/postgres-group-shape.ts
 * env: SHAPE_TREES   comma-separated repo roots to compare (default: this tree); each opens its own
 *                    schema through its own migrations and its own src/ (loaded by path); a root may
 *                    carry store URL parameters of its own: `/path/to/tree?groupMax=32`
 *      SHAPE_CALLERS comma-separated caller counts (16), SHAPE_CLAIMS per run (3000),
 *      SHAPE_ROUNDS (3), SHAPE_PARAMS extra store URL parameters for the trees (e.g. groupConcurrency=2),
 *      SHAPE_NO_FLUSH=1  a diagnosis only: the bench database (both sides) commits with
 *                        synchronous_commit=off, to show what the commit flush costs each side
 * Everything runs in a database of its own (dropped at the end), so the sampler sees only this run.
 */
import { readFileSync, readdirSync } from 'node:fs';
import { resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import pg from 'pg';
import type { Dibs } from '../src/index.js';
import { timeOps } from './lib/measure.js';
import { loadNow, spread } from './lib/rounds.js';
import { RAW_CLAIM, RAW_CLAIM_WRAP, RAW_SCHEMA } from './lib/raw-claim.js';

const URL_BASE = process.env.BENCH_PG_URL ?? process.env.DIBS_TEST_PG ?? 'postgres://root@127.0.0.1:5432/test';
const TREES = (process.env.SHAPE_TREES ?? resolve(import.meta.dirname, '..')).split(',');
const CALLERS = (process.env.SHAPE_CALLERS ?? '16').split(',').map(Number);
const CLAIMS = Number(process.env.SHAPE_CLAIMS ?? 3000);
const ROUNDS = Number(process.env.SHAPE_ROUNDS ?? 3);
const EXTRA = new URLSearchParams(process.env.SHAPE_PARAMS ?? '');
const CONNECTIONS = 16;
const TICKS = 100; // USER_HZ: /proc/<pid>/stat counts CPU in 1/100 s

/** CPU ticks of a process (utime + stime), 0 when it is gone. */
function ticks(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(fields[11]) + Number(fields[12]);
  } catch {
    return 0;
  }
}

function walWriterPids(): number[] {
  const pids: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      if (readFileSync(`/proc/${entry}/cmdline`, 'utf8').includes('walwriter')) pids.push(Number(entry));
    } catch {}
  }
  return pids;
}

/** Where the patched ClaimGrouper.run records group sizes (the tree being measured). */
let recording: number[] | null = null;
/** Time grouped statements were in flight, summed over statements (ms). */
let inStatementMs = 0;

interface Measured {
  claimsPerS: number;
  groups: number[];
  nodeCpuUsPerClaim: number;
  pgCpuUsPerClaim: number;
  waits: Map<string, number>;
  samples: number;
  seconds: number;
  /** Grouped statements' time in flight, summed (ms). */
  statementMs: number;
  /** pg_stat_wal per claim, cluster-wide: bytes, full-page images, flushes (fsyncs). */
  walBytes: number;
  walFpi: number;
  walSyncs: number;
}

async function main() {
  const db = `shape_${process.pid}`;
  const admin = new pg.Client({ connectionString: URL_BASE });
  await admin.connect();
  await admin.query(`CREATE DATABASE ${db}`);
  if (process.env.SHAPE_NO_FLUSH === '1') await admin.query(`ALTER DATABASE ${db} SET synchronous_commit = off`);
  const dbUrl = new URL(URL_BASE);
  dbUrl.pathname = `/${db}`;
  const closers: (() => Promise<unknown>)[] = [];
  try {
    const need = ROUNDS * CALLERS.length * CLAIMS + 1000;
    const setup = new pg.Client({ connectionString: dbUrl.href });
    await setup.connect();
    closers.push(() => setup.end());
    await setup.query(`CREATE SCHEMA raw; SET search_path = raw; ${RAW_SCHEMA}`);
    await setup.query(`INSERT INTO raw_codes (code) SELECT 'RAW-' || g FROM generate_series(1, $1) AS g`, [need]);
    await setup.query('VACUUM ANALYZE raw_codes');
    const raw = new pg.Pool({ connectionString: dbUrl.href, max: CONNECTIONS, options: '-c search_path=raw' });
    raw.on('error', () => {}); // an idle connection ended by the DROP DATABASE at the end
    closers.push(() => raw.end());

    // Each tree: its own openDibs, and its ClaimGrouper's run patched to record each group's size.
    const trees: { label: string; dibs: Dibs; groups: number[] }[] = [];
    const patched = new Set<unknown>();
    for (const [t, tree] of TREES.entries()) {
      const [root, params] = tree.split('?') as [string, string | undefined];
      const mod = await import(pathToFileURL(resolve(root, 'src/index.ts')).href);
      const grouper = await import(pathToFileURL(resolve(root, 'src/backends/postgres/claim-grouper.ts')).href);
      const groups: number[] = [];
      const proto = grouper.ClaimGrouper.prototype;
      if (!patched.has(proto)) {
        patched.add(proto);
        const run = proto.run;
        proto.run = function (this: unknown, pool: string, group: readonly unknown[]) {
          recording?.push(group.length);
          const started = performance.now();
          const done: Promise<void> = run.call(this, pool, group);
          return done.finally(() => {
            inStatementMs += performance.now() - started;
          });
        };
      }
      const url = new URL(dbUrl.href);
      url.searchParams.set('schema', `tree${t}`);
      url.searchParams.set('poolSize', String(CONNECTIONS));
      for (const [k, v] of EXTRA) url.searchParams.set(k, v);
      for (const [k, v] of new URLSearchParams(params ?? '')) url.searchParams.set(k, v);
      const dibs = await mod.openDibs(url.href);
      closers.push(() => dibs.close());
      await dibs.pools.create({ name: 'p' });
      await dibs.pools.importCodes(
        'p',
        (function* () {
          for (let i = 0; i < need; i++) yield `C${t}-${i.toString(36)}-${(i * 7919).toString(36)}`;
        })(),
      );
      await setup.query(`VACUUM ANALYZE tree${t}.codes`);
      trees.push({ label: `tree${t} ${tree}`, dibs, groups });
    }

    const sampler = new pg.Client({ connectionString: dbUrl.href });
    await sampler.connect();
    closers.push(() => sampler.end());
    const measure = async (op: (i: number) => Promise<unknown>, callers: number, groups: number[] | null) => {
      const backends = async () =>
        (
          await sampler.query<{ pid: number }>(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND backend_type = 'client backend'",
          )
        ).rows.map((r) => r.pid);
      const walwriters = walWriterPids();
      // cluster-wide (other databases' writes count too): a witness, not a measurement of this run alone
      const wal = async () =>
        (
          await sampler.query<{ bytes: string; fpi: string; syncs: string }>(
            'SELECT wal_bytes::text AS bytes, wal_fpi::text AS fpi, wal_sync::text AS syncs FROM pg_stat_wal',
          )
        ).rows[0]!;
      const walBefore = await wal();
      const before = new Map<number, number>();
      for (const pid of [...(await backends()), ...walwriters]) before.set(pid, ticks(pid));
      const waits = new Map<string, number>();
      let samples = 0;
      let sampling = true;
      const sampling$ = (async () => {
        while (sampling) {
          const { rows } = await sampler.query<{ w: string }>(
            `SELECT coalesce(wait_event_type || ':' || wait_event, 'CPU') AS w FROM pg_stat_activity
             WHERE datname = current_database() AND pid <> pg_backend_pid() AND state = 'active'`,
          );
          samples++;
          for (const { w } of rows) waits.set(w, (waits.get(w) ?? 0) + 1);
          await new Promise((r) => setTimeout(r, 10));
        }
      })();
      recording = groups;
      inStatementMs = 0;
      const groupsBefore = groups?.length ?? 0;
      const cpu = process.cpuUsage();
      const run = await timeOps(CLAIMS, callers, op);
      const node = process.cpuUsage(cpu);
      sampling = false;
      recording = null;
      await sampling$;
      const walAfter = await wal();
      const walDelta = (k: 'bytes' | 'fpi' | 'syncs') => (Number(walAfter[k]) - Number(walBefore[k])) / CLAIMS;
      let pgTicks = 0;
      for (const pid of [...(await backends()), ...walwriters]) pgTicks += ticks(pid) - (before.get(pid) ?? 0);
      return {
        claimsPerS: CLAIMS / run.seconds,
        groups: groups ? groups.slice(groupsBefore) : [],
        nodeCpuUsPerClaim: (node.user + node.system) / CLAIMS,
        pgCpuUsPerClaim: ((pgTicks / TICKS) * 1e6) / CLAIMS,
        waits,
        samples,
        seconds: run.seconds,
        statementMs: inStatementMs,
        walBytes: walDelta('bytes'),
        walFpi: walDelta('fpi'),
        walSyncs: walDelta('syncs'),
      } satisfies Measured;
    };

    let n = 0;
    const results = new Map<string, Measured[]>();
    const note = (label: string, m: Measured) => {
      results.set(label, [...(results.get(label) ?? []), m]);
      const g = m.groups;
      console.log(
        `${label}: ${Math.round(m.claimsPerS)} claims/s, node ${m.nodeCpuUsPerClaim.toFixed(0)} µs/claim, pg ${m.pgCpuUsPerClaim.toFixed(0)} µs/claim` +
          (g.length
            ? `, ${g.length} statements (${Math.round(g.length / m.seconds)}/s), mean group ${(CLAIMS / g.length).toFixed(1)}`
            : ''),
      );
    };
    const load = loadNow();
    for (let r = 0; r < ROUNDS; r++) {
      for (const callers of CALLERS) {
        note(
          `raw@${callers}`,
          await measure(
            async (i) => {
              const claimant = `u${n++}-${i}`;
              const { rows } = await raw.query({ name: 'raw', text: RAW_CLAIM, values: [claimant, Math.random()] });
              if (rows.length === 0) await raw.query({ name: 'raw_wrap', text: RAW_CLAIM_WRAP, values: [claimant] });
            },
            Math.min(callers, CONNECTIONS),
            null,
          ),
        );
        for (const tree of trees)
          note(
            `${tree.label}@${callers}`,
            await measure((i) => tree.dibs.pools.claim('p', `u${n++}-${i}`), callers, tree.groups),
          );
      }
    }
    console.log(`\nload ${load} → ${loadNow()}`);
    for (const [label, runs] of results) {
      const sizes = runs.flatMap((m) => m.groups);
      const hist = new Map<number, number>();
      for (const s of sizes) hist.set(s, (hist.get(s) ?? 0) + 1);
      const waits = new Map<string, number>();
      let total = 0;
      for (const m of runs)
        for (const [w, c] of m.waits) {
          waits.set(w, (waits.get(w) ?? 0) + c);
          total += c;
        }
      const rawRuns = results.get(`raw@${label.split('@')[1]}`)!;
      const ratios = runs.map((m, i) => m.claimsPerS / rawRuns[i]!.claimsPerS);
      const f = (s: ReturnType<typeof spread>, d = 0) =>
        `${s.median.toFixed(d)} (${s.min.toFixed(d)}–${s.max.toFixed(d)})`;
      console.log(`\n${label}`);
      console.log(`  claims/s ${f(spread(runs.map((m) => m.claimsPerS)))}, vs raw ${f(spread(ratios), 2)}×`);
      console.log(
        `  CPU µs/claim: node ${f(spread(runs.map((m) => m.nodeCpuUsPerClaim)))}, postgres ${f(spread(runs.map((m) => m.pgCpuUsPerClaim)))}`,
      );
      console.log(
        `  WAL per claim (cluster-wide): ${f(spread(runs.map((m) => m.walBytes)))} bytes, ${f(spread(runs.map((m) => m.walFpi)), 2)} full-page images, claims per flush ${f(spread(runs.map((m) => 1 / m.walSyncs)), 1)}`,
      );
      if (sizes.length) {
        const sorted = [...hist.entries()].sort((a, b) => a[0] - b[0]);
        console.log(
          `  statements/s ${f(spread(runs.map((m) => m.groups.length / m.seconds)))}, ms per statement (call to rows, commit included) ${f(spread(runs.map((m) => m.statementMs / m.groups.length)), 1)}, statements in flight ${f(spread(runs.map((m) => m.statementMs / 1000 / m.seconds)), 2)}; group sizes (size×count): ${sorted.map(([s, c]) => `${s}×${c}`).join(' ')}`,
        );
      }
      const busy = [...waits.entries()].sort((a, b) => b[1] - a[1]).slice(0, 6);
      const samples = runs.reduce((a, m) => a + m.samples, 0);
      console.log(
        `  active backends per sample ${(total / samples).toFixed(1)}; waits: ${busy.map(([w, c]) => `${w} ${((100 * c) / total).toFixed(0)}%`).join(', ')}`,
      );
    }
  } finally {
    for (const close of closers.reverse()) await close().catch(() => {});
    await admin.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => {});
    await admin.end();
  }
}

await main();
