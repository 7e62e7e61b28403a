/**
 * HTTP service vs the library on the same store (SQLite file, synchronous=FULL): claims/s,
 * p50/p99, CPU per claim and the service's RSS under load. The service runs as its own process
 * (`dibs serve`, LOG_LEVEL=warn or BENCH_LOG_LEVEL, rate limit off); autocannon drives it from this process with
 * BENCH_CONNECTIONS keep-alive connections, each request a new claimant with an API key (so auth,
 * the tenant layer, validation, metrics and JSON are all paid for). The library baseline calls
 * `dibs.pools.claim` in-process with the same concurrency. BENCH_WORKERS=N runs the service as
 * `dibs serve --workers N` (node:cluster); its RSS and CPU are then summed over the primary and the workers.
 *
 * Both sides run what users run: the compiled JavaScript in dist/ (built first when missing or
 * older than src/), `node dist/cli/main.js serve` and `import 'dibs'`. BENCH_SERVE=tsx runs the
 * TypeScript sources through tsx instead; BENCH_DIST=<dir> runs another build (A/B of two builds). BENCH_NODE_ARGS adds flags to the service's node
 * (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile it).
 *
 * Both sides first make BENCH_WARMUP claims (default 2,000) that are not measured: a service
 * runs for long, and a cold JIT (V8 compiling on background threads) inflated the service's CPU
 * per request by 5–40 % in 20,000-claim runs.
 *
 * CPU per claim — far less sensitive to what else the machine runs than claims/s — is read from
 * /proc/<pid>/stat (utime + stime) of the service over the autocannon run, and from
 * process.cpuUsage() for the library run (which includes SQLite's work, in-process; PostgreSQL's
 * server CPU is on neither side). autocannon shares this machine's cores with the service.
 */
import autocannon from 'autocannon';
import { execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { createApiKey } from '../src/service/auth/keys.js';
import { distIsFresh } from './lib/dist.js';
import { summarise, timeOps } from './lib/measure.js';
import { seedDibs } from './lib/seed.js';

const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 20_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
/** Claims made before measuring, on both sides (JIT warm-up: a long-running service is warm). */
const WARMUP = Number(process.env.BENCH_WARMUP ?? 2000);
/** SQLite durability: full (fsync per commit, the default) or normal (the CPU cost shows more). */
const SYNC = process.env.BENCH_SYNC ?? 'full';
/** Service processes (`dibs serve --workers`). */
const WORKERS = Number(process.env.BENCH_WORKERS ?? 1);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
/** `dist` (default: the compiled JS users run) or `tsx` (the TypeScript sources). */
const SERVE = process.env.BENCH_SERVE ?? 'dist';
/** Another build to run instead of ./dist (A/B comparisons of two builds; not rebuilt). */
const DIST = process.env.BENCH_DIST ?? join(ROOT, 'dist');
/** The service's LOG_LEVEL (`dibs serve` defaults to info: one access-log line per request, to stdout → /dev/null here). */
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL ?? 'warn';
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(/\s+/).filter(Boolean);

/** Builds dist/ when it is missing or older than src/. */
function ensureBuilt(): void {
  if (distIsFresh(ROOT)) return;
  console.log('building dist/ (node scripts/build.mjs) …');
  execFileSync(process.execPath, [join(ROOT, 'scripts', 'build.mjs')], { cwd: ROOT, stdio: 'inherit' });
}

const TICKS_PER_SECOND = 100; // USER_HZ: 100 on Linux everywhere that matters (getconf CLK_TCK)
/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat. */
const ownCpuSeconds = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from the 3rd (state) on
    return (Number(fields[11]) + Number(fields[12])) / TICKS_PER_SECOND; // utime (14th), stime (15th)
  } catch {
    return 0;
  }
};
const childrenOf = (pid: number): number[] => {
  try {
    return readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    return []; // no children listing: the process alone
  }
};
/** CPU seconds of the service: the process plus its cluster workers. */
const cpuSeconds = (pid: number) => ownCpuSeconds(pid) + childrenOf(pid).reduce((sum, child) => sum + ownCpuSeconds(child), 0);

/** `sqlite` (default) or `postgres` (BENCH_PG, default the test server). */
const BACKEND = process.env.BENCH_BACKEND ?? 'sqlite';
const PG = process.env.BENCH_PG ?? 'postgres://root@127.0.0.1:5432/test';
const schemas: string[] = [];
function storeUrl(dir: string, name: string): string {
  if (BACKEND === 'postgres') {
    const schema = `bench_http_${name}_${process.pid}`;
    schemas.push(schema);
    return `${PG}?schema=${schema}`;
  }
  return `sqlite:${join(dir, `${name}.db`)}?synchronous=${SYNC}`;
}

const ownRssMb = (pid: number) => {
  try {
    const match = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return match ? Number(match[1]) / 1024 : 0;
  } catch {
    return 0; // gone meanwhile
  }
};
/** RSS of the service: the process plus its cluster workers. */
const rssMb = (pid: number) => ownRssMb(pid) + childrenOf(pid).reduce((sum, child) => sum + ownRssMb(child), 0);

export async function main(): Promise<void> {
  if (SERVE !== 'tsx' && !process.env.BENCH_DIST) ensureBuilt();
  const { openDibs } = (await import(SERVE === 'tsx' ? '../src/index.js' : pathToFileURL(join(DIST, 'index.js')).href)) as typeof import('../src/index.js');
  const cli = SERVE === 'tsx' ? ['--import', 'tsx', join(ROOT, 'src', 'cli', 'main.ts')] : [join(DIST, 'cli', 'main.js')];
  const dir = mkdtempSync(join(tmpdir(), 'dibs-bench-http-'));
  try {
    // Library, in-process.
    const libStore = storeUrl(dir, 'lib');
    await seedDibs(libStore, CLAIMS + WARMUP);
    const lib = await openDibs(libStore);
    await timeOps(WARMUP, CONNECTIONS, (i) => lib.pools.claim('bench', `warm-${i}`));
    const libCpu = process.cpuUsage();
    const libRun = await timeOps(CLAIMS, CONNECTIONS, (i) => lib.pools.claim('bench', `user-${i}`));
    const libCpuUsage = process.cpuUsage(libCpu);
    await lib.close();
    const library = summarise('library (dibs.pools.claim)', libRun.latencies, libRun.seconds);
    const libUsPerClaim = (libCpuUsage.user + libCpuUsage.system) / CLAIMS;

    // Service, its own process.
    const store = storeUrl(dir, 'http');
    await seedDibs(store, CLAIMS + WARMUP);
    const keyStore = await openDibs(store);
    const { key } = await createApiKey(keyStore.backend.service!, { name: 'bench', scopes: ['pools:claim'] });
    await keyStore.close();
    const child = spawn(process.execPath, [...NODE_ARGS, ...cli, 'serve', '--port', '0', '--no-jobs', '--rate-limit', '0', '--workers', String(WORKERS), '--store', store], { cwd: ROOT, env: { ...process.env, LOG_LEVEL }, stdio: ['ignore', 'ignore', 'pipe'] });
    try {
      const url = await new Promise<string>((resolve, reject) => {
        let err = '';
        child.stderr!.on('data', (d) => {
          err += d;
          const m = /dibs is serving (http:\/\/\S+)/.exec(err);
          if (m) resolve(m[1]!);
        });
        child.on('exit', () => reject(new Error(`serve exited:\n${err}`)));
      });
      const idleRss = rssMb(child.pid!);
      let peakRss = idleRss;
      const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(child.pid!))), 100);
      const claims = (amount: number, prefix: string) => {
        let n = 0;
        return autocannon({
          url,
          connections: CONNECTIONS,
          amount,
          requests: [{
            method: 'POST',
            path: '/v1/pools/bench/claims',
            headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
            setupRequest: (req) => ({ ...req, body: JSON.stringify({ claimant: `${prefix}-${n++}` }) }),
          }],
        });
      };
      if (WARMUP > 0) await claims(WARMUP, 'warm');
      const serviceCpuBefore = cpuSeconds(child.pid!);
      const benchCpu = process.cpuUsage();
      const started = performance.now();
      const result = await claims(CLAIMS, 'user');
      const seconds = (performance.now() - started) / 1000; // autocannon's own duration is rounded
      const serviceCpu = cpuSeconds(child.pid!) - serviceCpuBefore;
      const benchCpuUsage = process.cpuUsage(benchCpu);
      clearInterval(sampler);
      const served = result['2xx'] + result.non2xx;
      const serviceUsPerClaim = (serviceCpu * 1e6) / served;
      const autocannonUsPerClaim = (benchCpuUsage.user + benchCpuUsage.system) / served;
      const httpPerSecond = result['2xx'] / seconds;
      const fmt = (x: number) => Math.round(x).toLocaleString('en-US');
      console.log(`\nHTTP claim vs library, ${BACKEND === 'postgres' ? 'PostgreSQL' : `SQLite (synchronous=${SYNC})`}, ${CLAIMS} claims (after ${WARMUP} warm-up claims), ${CONNECTIONS} in flight, ${WORKERS} service worker(s), LOG_LEVEL=${LOG_LEVEL}, ${SERVE === 'tsx' ? 'TypeScript through tsx' : process.env.BENCH_DIST ? DIST : 'compiled dist/'}, load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
      console.log('| run | claims | claims/s | p50 ms | p99 ms | vs library | CPU µs per claim |');
      console.log('|---|---:|---:|---:|---:|---:|---:|');
      console.log(`| ${library.label} | ${library.ops} | ${fmt(library.perSecond)} | ${library.p50.toFixed(2)} | ${library.p99.toFixed(2)} | 1.00× | ${fmt(libUsPerClaim)} (in-process) |`);
      console.log(`| HTTP (dibs serve + autocannon) | ${result['2xx']} | ${fmt(httpPerSecond)} | ${result.latency.p50.toFixed(2)} | ${result.latency.p99.toFixed(2)} | ${(httpPerSecond / library.perSecond).toFixed(2)}× | ${fmt(serviceUsPerClaim)} (service) |`);
      console.log(`\nservice CPU: ${serviceCpu.toFixed(2)} s over ${seconds.toFixed(1)} s (${fmt((100 * serviceCpu) / seconds)} % of one core), ${fmt(serviceUsPerClaim)} µs per request (library: ${fmt(libUsPerClaim)} µs per claim, so HTTP adds ${fmt(serviceUsPerClaim - libUsPerClaim)} µs); autocannon (this process, same cores): ${fmt(autocannonUsPerClaim)} µs per request`);
      console.log(`service RSS: ${idleRss.toFixed(0)} MB idle, ${peakRss.toFixed(0)} MB peak under load; non-2xx ${result.non2xx}, errors ${result.errors}, timeouts ${result.timeouts}`);
    } finally {
      child.kill('SIGTERM');
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
    for (const schema of schemas) {
      const client = new pg.Client({ connectionString: PG });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    }
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
