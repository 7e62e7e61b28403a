/**
 * Where SQLite's 4-process claim tail comes from, and old against new: interleaved rounds of
 * 4 processes × 8 claims in flight on one fresh file per run, for each checkout given.
 *
 *   node --import tsx bench/tools/sqlite-tail-ab.ts [--rounds=3] [--claims=10000] [--detail] TREE[@VAR=value] …
 *
 * TREE is a checkout directory with node_modules (e.g. `git archive` of the base commit into /tmp
 * plus a node_modules symlink), or `raw` for bench/sqlite.ts's raw statement; `@VAR=value` sets an
 * environment variable for that tree's workers (an A/B switch). Per run it prints claims/s, p50,
 * p99, p99.9 and each process's p99, so a fair-share problem (one process starving) shows; last,
 * the median (min–max) over rounds. With --detail and a tree carrying sqlite-write-probe.patch
 * (`git apply bench/tools/sqlite-write-probe.patch` in that tree; not kept in src), also each
 * write batch's lock wait (of it: blocked inside SQLite's busy wait, and board pauses), run,
 * commit and the time after COMMIT, the checkpoints and how many tail claims overlapped one of
 * their own process's, the event loop's delay and GC pauses.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { percentile } from '../lib/measure.js';
import { createRawDb } from '../sqlite.js';

const PROCESSES = 4;
const IN_FLIGHT = 8;
const WORKER = fileURLToPath(new URL('./sqlite-tail-worker.ts', import.meta.url));
const RAW_WORKER = fileURLToPath(new URL('../sqlite-worker.ts', import.meta.url));
const HERE = fileURLToPath(new URL('../../', import.meta.url));

interface WorkerOut {
  latencies: number[];
  starts?: number[];
  seconds: number;
  batches?: number[][];
  loop?: { p99: number; max: number };
  gcMs?: number;
  gcMax?: number;
}

const option = (name: string, fallback: number) =>
  Number(process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const rounds = option('rounds', 3);
const claims = option('claims', 10_000);
const detail = process.argv.includes('--detail');
const trees = process.argv.slice(2).filter((a) => !a.startsWith('--'));
const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const q = (xs: number[], p: number) => percentile(sorted(xs), p);
const ms = (x: number) => x.toFixed(2);

function child(root: string, args: string[], env: Record<string, string>) {
  const proc = spawn(process.execPath, ['--import', 'tsx', ...args], {
    cwd: root,
    stdio: ['pipe', 'pipe', 'inherit'],
    env: { ...process.env, DIBS_PROBE: '1', ...env },
  });
  let out = '';
  proc.stdout.on('data', (d) => (out += d));
  const ready = new Promise<void>((resolve) => proc.stdout.on('data', () => out.includes('ready') && resolve()));
  const done = new Promise<string>((resolve, reject) =>
    proc.once('exit', (code) => (code === 0 ? resolve(out) : reject(new Error(`${args[0]} exited ${code}`)))),
  );
  return { proc, ready, done };
}

async function run(label: string, file: string): Promise<WorkerOut[]> {
  const [tree, setting] = label.split('@') as [string, string | undefined];
  const env: Record<string, string> = setting ? { [setting.split('=')[0]!]: setting.split('=')[1] ?? '' } : {};
  const raw = tree === 'raw';
  const root = raw ? HERE : tree;
  if (raw) createRawDb(file, claims);
  else await child(root, [WORKER, 'seed', root, `sqlite:${file}`, String(claims)], env).done;
  const workers = Array.from({ length: PROCESSES }, (_, i) =>
    child(
      root,
      raw
        ? [RAW_WORKER, 'raw', file, String(claims / PROCESSES), `p${i}`]
        : [WORKER, 'claim', root, `sqlite:${file}`, String(claims / PROCESSES), `p${i}`, String(IN_FLIGHT)],
      env,
    ),
  );
  await Promise.all(workers.map((w) => w.ready));
  for (const w of workers) w.proc.stdin.end('go\n');
  return Promise.all(workers.map(async (w) => JSON.parse((await w.done).replace(/^ready\n/, '')) as WorkerOut));
}

function printDetail(outs: WorkerOut[], tailFrom: number): void {
  const spread = (name: string, xs: number[]) =>
    `${name} p50 ${ms(q(xs, 50))} p90 ${ms(q(xs, 90))} p99 ${ms(q(xs, 99))} max ${ms(Math.max(...xs))}`;
  // probe rows: [start, wait, blocked, pauses, run, commit, after, size, WAL frames pending]; checkpoints: [start, -1, duration]
  const batches = outs.flatMap((o) => (o.batches ?? []).filter((b) => b[1] !== -1));
  if (batches.length > 0) {
    const col = (i: number) => batches.map((b) => b[i]!);
    console.log(`  ${batches.length} batches, mean size ${ms(col(7).reduce((a, b) => a + b, 0) / batches.length)}`);
    console.log(`  ${spread('wait', col(1))} | ${spread('blocked', col(2))} | ${spread('pauses', col(3))}`);
    console.log(`  ${spread('run', col(4))} | ${spread('commit', col(5))} | ${spread('after', col(6))}`);
    let tail = 0;
    let tailHit = 0;
    let hit = 0;
    for (const o of outs) {
      const checkpoints = (o.batches ?? []).filter((b) => b[1] === -1);
      console.log(`  checkpoints: ${checkpoints.map((c) => ms(c[2]!)).join(' ')}`);
      o.latencies.forEach((l, i) => {
        const start = o.starts![i]!;
        const overlaps = checkpoints.some((c) => c[0]! < start + l && c[0]! + c[2]! > start);
        if (overlaps) hit++;
        if (l >= tailFrom) {
          tail++;
          if (overlaps) tailHit++;
        }
      });
    }
    console.log(`  claims overlapping a checkpoint of their process: ${tailHit} of ${tail} in the tail, ${hit} of all`);
  }
  console.log(
    `  event loop delay p99/max per process: ${outs.map((o) => `${ms(o.loop?.p99 ?? 0)}/${ms(o.loop?.max ?? 0)}`).join(' ')}; GC ms total/longest: ${outs.map((o) => `${ms(o.gcMs ?? 0)}/${ms(o.gcMax ?? 0)}`).join(' ')}`,
  );
}

const dir = mkdtempSync(join(tmpdir(), 'dibs-sqlite-tail-'));
const byTree = new Map<string, { p99: number[]; p50: number[]; perSecond: number[] }>();
try {
  let n = 0;
  for (let r = 0; r < rounds; r++)
    for (const tree of trees) {
      const load = loadavg()[0]!.toFixed(1);
      const outs = await run(tree, join(dir, `run-${++n}.db`));
      const all = outs.flatMap((o) => o.latencies);
      const perSecond = all.length / Math.max(...outs.map((o) => o.seconds));
      const figures = byTree.get(tree) ?? { p99: [], p50: [], perSecond: [] };
      byTree.set(tree, figures);
      figures.p99.push(q(all, 99));
      figures.p50.push(q(all, 50));
      figures.perSecond.push(perSecond);
      console.log(
        `round ${r + 1} ${tree} (load ${load}): ${Math.round(perSecond)} claims/s, p50 ${ms(q(all, 50))} p99 ${ms(q(all, 99))} p99.9 ${ms(q(all, 99.9))} max ${ms(Math.max(...all))} ms; p99 per process ${outs.map((o) => ms(q(o.latencies, 99))).join(' ')}`,
      );
      if (detail && tree !== 'raw') printDetail(outs, q(all, 99));
    }
  const median = (xs: number[]) => `${ms(q(xs, 50))} (${ms(Math.min(...xs))}–${ms(Math.max(...xs))})`;
  console.log(`\nmedian (min–max) over ${rounds} rounds, load now ${loadavg()[0]!.toFixed(1)}:`);
  for (const [tree, f] of byTree)
    console.log(`${tree}: p99 ${median(f.p99)} ms, p50 ${median(f.p50)} ms, claims/s ${median(f.perSecond)}`);
} finally {
  rmSync(dir, { recursive: true, force: true });
}
