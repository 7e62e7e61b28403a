/**
 * HTTP service vs the library on the same store (SQLite file, synchronous=FULL): claims/s,
 * p50/p99 and the service's RSS under load. The service runs as its own process (`dibs serve`,
 * LOG_LEVEL=warn, rate limit off); autocannon drives it with BENCH_CONNECTIONS keep-alive
 * connections, each request a new claimant with an API key (so auth, the tenant layer,
 * validation, metrics and JSON are all paid for). The library baseline calls `dibs.pools.claim`
 * in-process with the same concurrency. BENCH_WORKERS=N runs the service as `dibs serve --workers N`
 * (node:cluster); its RSS is then the sum over the primary and the workers.
 */
import autocannon from 'autocannon';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openDibs } from '../src/index.js';
import { createApiKey } from '../src/service/auth/keys.js';
import { summarise, timeOps } from './lib/measure.js';
import { seedDibs } from './lib/seed.js';

const CLAIMS = Number(process.env.BENCH_CLAIMS ?? 20_000);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 16);
/** SQLite durability: full (fsync per commit, the default) or normal (the CPU cost shows more). */
const SYNC = process.env.BENCH_SYNC ?? 'full';
/** Service processes (`dibs serve --workers`). */
const WORKERS = Number(process.env.BENCH_WORKERS ?? 1);
const ROOT = fileURLToPath(new URL('../', import.meta.url));
const CLI = fileURLToPath(new URL('../src/cli/main.ts', import.meta.url));

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
const rssMb = (pid: number) => {
  let children: number[] = [];
  try {
    children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number);
  } catch {
    // no children listing: the process alone
  }
  return ownRssMb(pid) + children.reduce((sum, child) => sum + ownRssMb(child), 0);
};

export async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-bench-http-'));
  try {
    // Library, in-process.
    const libStore = storeUrl(dir, 'lib');
    await seedDibs(libStore, CLAIMS);
    const lib = await openDibs(libStore);
    const libRun = await timeOps(CLAIMS, CONNECTIONS, (i) => lib.pools.claim('bench', `user-${i}`));
    await lib.close();
    const library = summarise('library (dibs.pools.claim)', libRun.latencies, libRun.seconds);

    // Service, its own process.
    const store = storeUrl(dir, 'http');
    await seedDibs(store, CLAIMS);
    const keyStore = await openDibs(store);
    const { key } = await createApiKey(keyStore.backend.service!, { name: 'bench', scopes: ['pools:claim'] });
    await keyStore.close();
    const child = spawn(process.execPath, ['--import', 'tsx', CLI, 'serve', '--port', '0', '--no-jobs', '--rate-limit', '0', '--workers', String(WORKERS), '--store', store], { cwd: ROOT, env: { ...process.env, LOG_LEVEL: 'warn' }, stdio: ['ignore', 'pipe', 'pipe'] });
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
      let n = 0;
      const result = await autocannon({
        url,
        connections: CONNECTIONS,
        amount: CLAIMS,
        requests: [{
          method: 'POST',
          path: '/v1/pools/bench/claims',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          setupRequest: (req) => ({ ...req, body: JSON.stringify({ claimant: `user-${n++}` }) }),
        }],
      });
      clearInterval(sampler);
      const httpPerSecond = result['2xx'] / result.duration;
      const fmt = (x: number) => Math.round(x).toLocaleString('en-US');
      console.log(`\nHTTP claim vs library, ${BACKEND === 'postgres' ? 'PostgreSQL' : `SQLite (synchronous=${SYNC})`}, ${CLAIMS} claims, ${CONNECTIONS} in flight, ${WORKERS} service worker(s), load average ${loadavg().map((l) => l.toFixed(1)).join(' ')}`);
      console.log('| run | claims | claims/s | p50 ms | p99 ms | vs library |');
      console.log('|---|---:|---:|---:|---:|---:|');
      console.log(`| ${library.label} | ${library.ops} | ${fmt(library.perSecond)} | ${library.p50.toFixed(2)} | ${library.p99.toFixed(2)} | 1.00× |`);
      console.log(`| HTTP (dibs serve + autocannon) | ${result['2xx']} | ${fmt(httpPerSecond)} | ${result.latency.p50.toFixed(2)} | ${result.latency.p99.toFixed(2)} | ${(httpPerSecond / library.perSecond).toFixed(2)}× |`);
      console.log(`\nservice RSS: ${idleRss.toFixed(0)} MB idle, ${peakRss.toFixed(0)} MB peak under load; non-2xx ${result.non2xx}, errors ${result.errors}, timeouts ${result.timeouts}`);
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
