/**
 * Cold-start storm: 200 short-lived processes (at most 50 alive at once), each loading dibs from
 * dist/, opening it, making 5 claims and closing — against PostgreSQL through a PgBouncer in
 * transaction mode, against Redis, and through dibs/client over HTTP (the service over Redis).
 * Reports open and open-to-first-claim p50/p99, the most server connections in use, claims/s,
 * errors and the pool's audit. `npm run bench -- cold-start`; PROCESSES / ALIVE override the sizes.
 */
import { execFileSync, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { openDibs, type Dibs } from '../src/index.js';
import { buildServer } from '../src/service/app.js';
import { createApiKey } from '../src/service/auth/keys.js';
import { startPgBouncer } from '../test/support/pgbouncer.js';
import { tempPgStore } from '../test/support/postgres.js';
import { startRedis } from '../test/support/redis.js';
import { distIsFresh } from './lib/dist.js';
import { percentile } from './lib/measure.js';
import { Redis } from 'ioredis';

const PROCESSES = Number(process.env.PROCESSES ?? 200);
const ALIVE = Number(process.env.ALIVE ?? 50);
const CLAIMS = 5;
const root = fileURLToPath(new URL('../', import.meta.url));
const worker = fileURLToPath(new URL('./cold-start-worker.mjs', import.meta.url));

interface WorkerResult { importMs: number; openMs: number; firstClaimMs: number | null; claims: number[]; errors: number }

async function storm(args: (i: number) => string[], sampleConnections: () => Promise<number>) {
  const results: WorkerResult[] = [];
  let failedProcesses = 0;
  let maxConnections = 0;
  let sampling = true;
  const sampler = (async () => {
    while (sampling) {
      maxConnections = Math.max(maxConnections, await sampleConnections().catch(() => 0));
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  const started = performance.now();
  let next = 0;
  await Promise.all(Array.from({ length: ALIVE }, async () => {
    while (next < PROCESSES) {
      const i = next++;
      const out = await new Promise<string>((resolve) => {
        const child = spawn(process.execPath, [worker, ...args(i)], { cwd: root, stdio: ['ignore', 'pipe', 'inherit'] });
        let text = '';
        child.stdout.on('data', (chunk: Buffer) => { text += chunk.toString(); });
        const killer = setTimeout(() => child.kill('SIGKILL'), 120_000);
        child.on('close', () => {
          clearTimeout(killer);
          resolve(text);
        });
      });
      try {
        results.push(JSON.parse(out.trim().split('\n').pop()!) as WorkerResult);
      } catch {
        failedProcesses++;
      }
    }
  }));
  const seconds = (performance.now() - started) / 1000;
  sampling = false;
  await sampler;
  const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
  const open = sorted(results.map((r) => r.openMs));
  const first = sorted(results.filter((r) => r.firstClaimMs !== null).map((r) => r.firstClaimMs!));
  const imports = sorted(results.map((r) => r.importMs));
  const claims = results.reduce((n, r) => n + r.claims.length, 0);
  return {
    processes: results.length,
    failedProcesses,
    errors: results.reduce((n, r) => n + r.errors, 0) + failedProcesses * CLAIMS,
    claims,
    claimsPerSecond: claims / seconds,
    seconds,
    importP50: percentile(imports, 50),
    openP50: percentile(open, 50),
    openP99: percentile(open, 99),
    firstP50: percentile(first, 50),
    firstP99: percentile(first, 99),
    maxConnections,
  };
}

async function seed(dibs: Dibs, pool: string): Promise<void> {
  await dibs.pools.create({ name: pool, perClaimantLimit: 1 });
  await dibs.pools.importCodes(pool, Array.from({ length: PROCESSES * CLAIMS + 200 }, (_, i) => `${pool.toUpperCase()}-${i}`));
}

async function verdict(dibs: Dibs, pool: string): Promise<string> {
  const [stats, violations] = [await dibs.pools.stats(pool), await dibs.pools.audit(pool)];
  return `claimed ${stats.claimed}, audit ${violations.length === 0 ? 'clean' : `${violations.length} violations`}`;
}

export async function main(): Promise<void> {
  if (!distIsFresh(root)) execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: 'inherit' });
  const rows: string[] = [];
  const row = (label: string, r: Awaited<ReturnType<typeof storm>>, audit: string, connections: string) =>
    rows.push(`| ${label} | ${r.processes} | ${r.openP50.toFixed(1)} / ${r.openP99.toFixed(1)} | ${r.firstP50.toFixed(1)} / ${r.firstP99.toFixed(1)} | ${r.importP50.toFixed(0)} | ${connections.replace('%', String(r.maxConnections))} | ${Math.round(r.claimsPerSecond)} | ${r.errors} | ${audit} |`);

  // PostgreSQL through PgBouncer (transaction mode, 20 server connections).
  const bouncer = await startPgBouncer({ poolSize: 20 });
  const temp = tempPgStore();
  try {
    const direct = await openDibs(temp.store);
    await seed(direct, 'cold');
    const store = bouncer.url({ schema: temp.schema, pooler: 'transaction', poolSize: '2' });
    const r = await storm((i) => ['library', store, 'cold', `p${i}`], async () => {
      const pools = await bouncer.admin<{ database: string; sv_active: number; sv_idle: number; sv_used: number; sv_tested: number; sv_login: number }>('SHOW POOLS');
      return pools.filter((p) => p.database !== 'pgbouncer').reduce((n, p) => n + p.sv_active + p.sv_idle + p.sv_used + p.sv_tested + p.sv_login, 0);
    });
    row('PostgreSQL via PgBouncer (transaction)', r, await verdict(direct, 'cold'), '% server (pool of 20)');
    await direct.close();
  } finally {
    await temp.drop();
    await bouncer.stop();
  }

  // Redis (a bench-owned server) and the HTTP client (the service over the same Redis).
  const redis = await startRedis();
  const watcher = new Redis(redis.url);
  const clients = async () => (await watcher.client('LIST') as string).trim().split('\n').length - 1;
  try {
    const lib = await openDibs(redis.url);
    await seed(lib, 'cold-redis');
    const r = await storm((i) => ['library', redis.url, 'cold-redis', `p${i}`], clients);
    row('Redis', r, await verdict(lib, 'cold-redis'), '% clients');

    await seed(lib, 'cold-http');
    const app = buildServer({ dibs: lib, rateLimit: false, logger: false });
    await app.listen({ port: 0, host: '127.0.0.1' });
    const { port } = app.server.address() as { port: number };
    const apiKey = (await createApiKey(lib.backend.service!, { name: 'bench', scopes: ['pools:claim'] })).key;
    const before = await clients();
    const h = await storm((i) => ['client', `http://127.0.0.1:${port}`, 'cold-http', `p${i}`, apiKey], () => new Promise<number>((resolve) => app.server.getConnections((_, n) => resolve(n))));
    row('dibs/client over HTTP (service on Redis)', h, await verdict(lib, 'cold-http'), `% HTTP, ${before} Redis`);
    await app.close();
    await lib.close();
  } finally {
    watcher.disconnect();
    await redis.stop();
  }

  console.log(`\nCold-start storm: ${PROCESSES} processes, at most ${ALIVE} alive, ${CLAIMS} claims each (times in ms, from dist/)`);
  console.log('| target | processes | open p50 / p99 | open → 1st claim p50 / p99 | import p50 | most connections | claims/s | errors | result |');
  console.log('|---|---:|---:|---:|---:|---|---:|---:|---|');
  for (const r of rows) console.log(r);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
