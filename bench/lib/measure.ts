/** Small measuring helpers shared by the benchmarks: latency percentiles, tables, process fan-out. */
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';

export interface RunStats {
  label: string;
  ops: number;
  seconds: number;
  perSecond: number;
  p50: number;
  p99: number;
}

export function percentile(sortedMs: number[], p: number): number {
  if (sortedMs.length === 0) return 0;
  return sortedMs[Math.min(sortedMs.length - 1, Math.floor((p / 100) * sortedMs.length))]!;
}

export function summarise(label: string, latenciesMs: number[], seconds: number): RunStats {
  const sorted = [...latenciesMs].sort((a, b) => a - b);
  return {
    label,
    ops: sorted.length,
    seconds,
    perSecond: sorted.length / seconds,
    p50: percentile(sorted, 50),
    p99: percentile(sorted, 99),
  };
}

/** Runs `op` `count` times with `concurrency` in flight; returns per-op latencies and wall time. */
export async function timeOps(
  count: number,
  concurrency: number,
  op: (i: number) => Promise<unknown> | unknown,
): Promise<{ latencies: number[]; seconds: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (next < count) {
        const i = next++;
        const t = performance.now();
        await op(i);
        latencies.push(performance.now() - t);
      }
    }),
  );
  return { latencies, seconds: (performance.now() - started) / 1000 };
}

export function printTable(title: string, rows: RunStats[], baseline: RunStats): void {
  console.log(`\n${title}`);
  console.log('| run | ops | claims/s | p50 ms | p99 ms | vs baseline |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const r of rows) {
    console.log(
      `| ${r.label} | ${r.ops} | ${Math.round(r.perSecond).toLocaleString('en-US')} | ${r.p50.toFixed(2)} | ${r.p99.toFixed(2)} | ${(r.perSecond / baseline.perSecond).toFixed(2)}× |`,
    );
  }
}

/**
 * Fans a benchmark out over `processes` OS processes running `script` (a TS file run through
 * tsx) with `args`; they start together after a barrier and each prints one JSON line of
 * latencies. Returns the combined stats over the wall time of the slowest process.
 */
export async function fanOut(
  label: string,
  script: URL,
  processes: number,
  args: (i: number) => string[],
): Promise<RunStats> {
  const root = fileURLToPath(new URL('../../', import.meta.url));
  const children = Array.from({ length: processes }, (_, i) => {
    const child = spawn(process.execPath, ['--import', 'tsx', fileURLToPath(script), ...args(i)], {
      cwd: root,
      stdio: ['pipe', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    const ready = new Promise<void>((resolve) => child.stdout.on('data', () => out.includes('ready') && resolve()));
    const done = new Promise<{ latencies: number[]; seconds: number }>((resolve, reject) =>
      child.once('exit', (code) =>
        code === 0
          ? resolve(JSON.parse(out.slice(out.indexOf('{'))))
          : reject(new Error(`${label} worker ${i} exited ${code}`)),
      ),
    );
    return { child, ready, done };
  });
  await Promise.all(children.map((c) => c.ready));
  for (const c of children) c.child.stdin.end('go\n');
  const results = await Promise.all(children.map((c) => c.done));
  return summarise(
    label,
    results.flatMap((r) => r.latencies),
    Math.max(...results.map((r) => r.seconds)),
  );
}

/** In a fan-out worker: announce readiness and wait for the start signal. */
export async function barrier(): Promise<void> {
  process.stdout.write('ready\n');
  await new Promise<void>((resolve) => process.stdin.once('data', () => resolve()));
}
