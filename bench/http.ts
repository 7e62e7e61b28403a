/**
 * HTTP service vs the library on the same store (BENCH_BACKEND: SQLite file, PostgreSQL or Redis):
 * claims/s, p50/p99, CPU per claim and the service's RSS under load. The service runs as its own
 * process (`dibs serve`, LOG_LEVEL=warn or BENCH_LOG_LEVEL, rate limit off); autocannon drives it
 * from this process with BENCH_CONNECTIONS keep-alive connections, each request a new claimant
 * with an API key (so auth, the tenant layer, validation, metrics and JSON are all paid for). The
 * library baseline calls `dibs.pools.claim` in-process with the same concurrency. BENCH_WORKERS=N
 * runs the service as `dibs serve --workers N` (node:cluster); its RSS and CPU are then summed
 * over the primary and the workers.
 *
 * Two HTTP baselines run in the same run, each its own process driven the same way
 * (bench/lib/bare-fastify.mjs): a bare Fastify route with no store (the floor of any Node HTTP
 * service here), and the same route calling `dibs.pools.claim` (the least any HTTP wrapper of the
 * library can do). So the ratio dibs serve / library stands beside the ratio no wrapper can beat.
 *
 * Both sides run what users run: the compiled JavaScript in dist/ (built first when missing or
 * older than src/), `node dist/cli/main.js serve` and `import 'dibs'`. BENCH_SERVE=tsx runs the
 * TypeScript sources through tsx instead; BENCH_DIST=<dir> runs another build (A/B of two
 * builds). BENCH_NODE_ARGS adds flags to the node of every server process, the
 * service and both bare routes (e.g. `--cpu-prof --cpu-prof-dir=/tmp/prof` to profile them side
 * by side; each profile is named after its process id).
 *
 * Every side first makes BENCH_WARMUP claims (default 2,000) that are not measured: a service
 * runs for long, and a cold JIT (V8 compiling on background threads) inflated the service's CPU
 * per request by 5–40 % in 20,000-claim runs.
 *
 * CPU per claim — far less sensitive to what else the machine runs than claims/s — is read from
 * /proc/<pid>/stat (utime + stime) of the server process over the autocannon run, and from
 * process.cpuUsage() for the library run (which includes SQLite's work, in-process); the store
 * server's (postgres, redis-server) is read the same way when it runs on this machine.
 * autocannon shares this machine's cores with the service.
 */
import autocannon from 'autocannon';
import { execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { Redis } from 'ioredis';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import pg from 'pg';
import { createApiKey, hashKey } from '../src/service/auth/keys.js';
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
/**
 * Another build's `dibs serve` run beside this one's in every round of `httpRounds` (an A/B of two
 * builds in one run, e.g. the tree before a change): a copy of an older dist/ kept inside the
 * checkout so its imports resolve (e.g. `.tmp/dist-old`, with `.tmp/package.json` a link to
 * `../package.json`, which the service reads its version from).
 */
const AB_DIST = process.env.BENCH_AB_DIST;
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
const cpuSeconds = (pid: number) =>
  ownCpuSeconds(pid) + childrenOf(pid).reduce((sum, child) => sum + ownCpuSeconds(child), 0);

/** `sqlite` (default), `postgres` (BENCH_PG, default the test server) or `redis` (BENCH_REDIS). */
const BACKEND = process.env.BENCH_BACKEND ?? 'sqlite';
const PG = process.env.BENCH_PG ?? 'postgres://root@127.0.0.1:5432/test';
const REDIS = process.env.BENCH_REDIS ?? 'redis://127.0.0.1:6379/0';
/** Extra store URL parameters (e.g. `groupConcurrency=2` on PostgreSQL), on both sides. */
const STORE_PARAMS = process.env.BENCH_STORE_PARAMS ?? '';
const schemas: string[] = [];
const prefixes: string[] = [];
const withParams = (url: string) => (STORE_PARAMS ? `${url}${url.includes('?') ? '&' : '?'}${STORE_PARAMS}` : url);
function storeUrl(dir: string, name: string): string {
  if (BACKEND === 'postgres') {
    const schema = `bench_http_${name}_${process.pid}`;
    schemas.push(schema);
    return withParams(`${PG}?schema=${schema}`);
  }
  if (BACKEND === 'redis') {
    const prefix = `bench-http-${name}-${process.pid}`;
    prefixes.push(prefix);
    return withParams(`${REDIS}?prefix=${prefix}`);
  }
  return withParams(`sqlite:${join(dir, `${name}.db`)}?synchronous=${SYNC}`);
}

/** Pids of every process whose command name is `name` (the store's server processes). */
const pidsNamed = (name: string): number[] =>
  readdirSync('/proc')
    .filter((entry) => /^\d+$/.test(entry))
    .map(Number)
    .filter((pid) => {
      try {
        return readFileSync(`/proc/${pid}/comm`, 'utf8').trim() === name;
      } catch {
        return false; // gone meanwhile
      }
    });
/**
 * CPU seconds the store's server has used so far (PostgreSQL: every postgres process plus what
 * exited backends left in their parents' cutime/cstime; Redis: redis-server). SQLite runs inside
 * the measured process itself, so it has no separate server: 0. Read only where this machine's
 * /proc shows them (a server elsewhere reads as 0, and the column says so).
 */
function storeServerCpuSeconds(): number {
  const name = BACKEND === 'postgres' ? 'postgres' : BACKEND === 'redis' ? 'redis-server' : undefined;
  if (!name) return 0;
  return pidsNamed(name).reduce((sum, pid) => sum + ownCpuSeconds(pid) + reapedCpuSeconds(pid), 0);
}
/** cutime + cstime: CPU of children this process has waited for (PostgreSQL's exited backends). */
const reapedCpuSeconds = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) / TICKS_PER_SECOND; // cutime (16th), cstime (17th)
  } catch {
    return 0;
  }
};

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

interface HttpRun {
  ok: number;
  non2xx: number;
  errors: number;
  timeouts: number;
  perSecond: number;
  p50: number;
  p99: number;
  /** CPU per request of the serving process(es), of the store server, of autocannon (this process). */
  processUs: number;
  serverUs: number;
  generatorUs: number;
  busyPercent: number;
  idleRss: number;
  peakRss: number;
}

/** A server process of one side (the service or a bare route), listening at `url`. */
interface Server {
  url: string;
  pid: number;
  /** The API key its requests carry, if any. */
  key: string | undefined;
  idleRss: number;
  stop(): void;
}

/**
 * Starts a server process (`args` to node, after BENCH_NODE_ARGS; it prints its URL to stderr,
 * matched by `ready`). `key`: the API key its requests carry; `env`: more environment for it.
 */
async function startServer(
  args: string[],
  ready: RegExp,
  key: string | undefined,
  env: Record<string, string> = {},
): Promise<Server> {
  const child = spawn(process.execPath, [...NODE_ARGS, ...args], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL, ...env },
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  try {
    const url = await new Promise<string>((resolve, reject) => {
      let err = '';
      child.stderr!.on('data', (d) => {
        err += d;
        const m = ready.exec(err);
        if (m) resolve(m[1]!);
      });
      child.on('exit', () => reject(new Error(`server exited:\n${err}`)));
    });
    return { url, pid: child.pid!, key, idleRss: rssMb(child.pid!), stop: () => child.kill('SIGTERM') };
  } catch (error) {
    child.kill('SIGTERM');
    throw error;
  }
}

/**
 * Drives `amount` claim requests at a running server through autocannon with CONNECTIONS
 * keep-alive connections, each a new claimant (`<prefix>-<n>`), and measures them.
 */
async function driveClaims(server: Server, amount: number, prefix: string): Promise<HttpRun> {
  const { url, key, pid } = server;
  let peakRss = rssMb(pid);
  const sampler = setInterval(() => (peakRss = Math.max(peakRss, rssMb(pid))), 100);
  /** The moment the latest response arrived: autocannon ends a fixed-amount run only on its
   * one-second tick, so its own duration (and the wall time around it) overstates a 2 s run by
   * up to half; the run ends when its last response arrives. */
  let lastResponse = 0;
  let n = 0;
  const processCpuBefore = cpuSeconds(pid);
  const serverCpuBefore = storeServerCpuSeconds();
  const benchCpu = process.cpuUsage();
  const started = performance.now();
  const run = autocannon({
    url,
    connections: CONNECTIONS,
    amount,
    requests: [
      {
        method: 'POST',
        path: '/v1/pools/bench/claims',
        headers: { ...(key ? { authorization: `Bearer ${key}` } : {}), 'content-type': 'application/json' },
        setupRequest: (req) => ({ ...req, body: JSON.stringify({ claimant: `${prefix}-${n++}` }) }),
      },
    ],
  });
  run.on('response', () => (lastResponse = performance.now()));
  const result = await run;
  const seconds = (lastResponse - started) / 1000;
  const processCpu = cpuSeconds(pid) - processCpuBefore;
  const serverCpu = storeServerCpuSeconds() - serverCpuBefore;
  const benchCpuUsage = process.cpuUsage(benchCpu);
  clearInterval(sampler);
  const served = result['2xx'] + result.non2xx;
  // A side that answered anything but 2xx (a refused key, a sold-out pool) measured something else.
  if (result['2xx'] !== amount)
    throw new Error(
      `${url}: ${result['2xx']} of ${amount} claims answered 2xx (non-2xx ${result.non2xx}, errors ${result.errors}, timeouts ${result.timeouts})`,
    );
  return {
    ok: result['2xx'],
    non2xx: result.non2xx,
    errors: result.errors,
    timeouts: result.timeouts,
    perSecond: result['2xx'] / seconds,
    p50: result.latency.p50,
    p99: result.latency.p99,
    processUs: (processCpu * 1e6) / served,
    serverUs: (serverCpu * 1e6) / served,
    generatorUs: (benchCpuUsage.user + benchCpuUsage.system) / served,
    busyPercent: (100 * processCpu) / seconds,
    idleRss: server.idleRss,
    peakRss,
  };
}

/** Starts a server, warms it up (unmeasured claims), measures `amounts.claims` claims, stops it. */
async function driveHttp(
  args: string[],
  ready: RegExp,
  key: string | undefined,
  env: Record<string, string> = {},
  amounts = { claims: CLAIMS, warmup: WARMUP },
): Promise<HttpRun> {
  const server = await startServer(args, ready, key, env);
  try {
    if (amounts.warmup > 0) await driveClaims(server, amounts.warmup, 'warm');
    return await driveClaims(server, amounts.claims, 'user');
  } finally {
    server.stop();
  }
}

/** One run of each side: the library in-process, the bare route, the bare route + library, `dibs serve`. */
export interface HttpSides {
  library: ReturnType<typeof summarise>;
  libUsPerClaim: number;
  libServerUsPerClaim: number;
  floor: HttpRun;
  wrapper: HttpRun;
  service: HttpRun;
}

/** Runs every side once on fresh stores in `dir` (`claims` measured after `warmup` unmeasured ones). */
export async function httpSides(dir: string, claims = CLAIMS, warmup = WARMUP): Promise<HttpSides> {
  if (!process.env.BENCH_DIST) ensureBuilt(); // the bare-route baseline imports the built library even when the service runs through tsx
  const { openDibs } = (await import(
    SERVE === 'tsx' ? '../src/index.js' : pathToFileURL(join(DIST, 'index.js')).href
  )) as typeof import('../src/index.js');
  const cli =
    SERVE === 'tsx' ? ['--import', 'tsx', join(ROOT, 'src', 'cli', 'main.ts')] : [join(DIST, 'cli', 'main.js')];
  const amounts = { claims, warmup };
  const round = ++rounds;
  // Library, in-process.
  const libStore = storeUrl(dir, `lib${round}`);
  await seedDibs(libStore, claims + warmup);
  const lib = await openDibs(libStore);
  await timeOps(warmup, CONNECTIONS, (i) => lib.pools.claim('bench', `warm-${i}`));
  const libCpu = process.cpuUsage();
  const libServerCpuBefore = storeServerCpuSeconds();
  const libRun = await timeOps(claims, CONNECTIONS, (i) => lib.pools.claim('bench', `user-${i}`));
  const libCpuUsage = process.cpuUsage(libCpu);
  const libServerUsPerClaim = ((storeServerCpuSeconds() - libServerCpuBefore) * 1e6) / claims;
  await lib.close();
  const library = summarise('library (dibs.pools.claim)', libRun.latencies, libRun.seconds);
  const libUsPerClaim = (libCpuUsage.user + libCpuUsage.system) / claims;

  // The HTTP floor: a bare Fastify route, its own process, no store. What any Node HTTP service
  // costs per request here, measured in this run, so the ratio below has its ceiling beside it.
  const bare = join(ROOT, 'bench', 'lib', 'bare-fastify.mjs');
  const bareReady = /bare fastify is serving (http:\/\/\S+)/;
  const floor = await driveHttp([bare], bareReady, undefined, {}, amounts);
  // The least an HTTP wrapper of the library can do: the same bare route calling
  // dibs.pools.claim on a fresh store of the same kind (no auth, tenants, hooks, logs, metrics).
  const wrapperStore = storeUrl(dir, `bare${round}`);
  await seedDibs(wrapperStore, claims + warmup);
  const wrapper = await driveHttp(
    [bare],
    bareReady,
    undefined,
    { DIBS_STORE: wrapperStore, DIBS_INDEX: join(DIST, 'index.js') },
    amounts,
  );

  // Service, its own process.
  const store = storeUrl(dir, `http${round}`);
  await seedDibs(store, claims + warmup);
  const keyStore = await openDibs(store);
  const { key } = await createApiKey(keyStore.backend.service, { name: 'bench', scopes: ['pools:claim'] });
  await keyStore.close();
  const service = await driveHttp(
    [...cli, 'serve', '--port', '0', '--no-jobs', '--rate-limit', '0', '--workers', String(WORKERS), '--store', store],
    /dibs is serving (http:\/\/\S+)/,
    key,
    {},
    amounts,
  );
  return { library, libUsPerClaim, libServerUsPerClaim, floor, wrapper, service };
}
let rounds = 0;

/** Each side's runs over the rounds of `httpRounds`. */
export interface HttpRounds {
  library: ReturnType<typeof summarise>[];
  /** The bare route calling the library. */
  wrapper: HttpRun[];
  /** The bare route checking an API key first, then calling the library. */
  keyed: HttpRun[];
  service: HttpRun[];
  /** `dibs serve` of the BENCH_AB_DIST build (empty without it). */
  serviceB: HttpRun[];
}

/**
 * `rounds` rounds of `claims` claims per side on servers started ONCE and warmed up (`warmup`
 * unmeasured claims each): the library in-process, the bare route calling it, the bare route
 * checking an API key and calling it (the fair baseline: the service's auth is not optional), and
 * `dibs serve` (and, with BENCH_AB_DIST, another build's `dibs serve`). Each round runs every side
 * once, back to back, in an order that turns around every round (A B C D, D C B A, …), so a side is
 * not always measured right after the same one.
 *
 * Why not `httpSides` per round: a round of it starts fresh servers on freshly seeded stores, so
 * its two HTTP runs stand seconds of seeding apart, and on a shared machine the disk's fsync
 * time (SQLite synchronous=full commits on the event loop) changes within seconds: same-round
 * ratios of 0.57–1.97× were the disk's noise, not the service's cost. Slices on warm servers
 * stand a few hundred milliseconds apart.
 */
export async function httpRounds(dir: string, roundCount: number, claims: number, warmup: number): Promise<HttpRounds> {
  if (!process.env.BENCH_DIST) ensureBuilt();
  const { openDibs } = (await import(
    SERVE === 'tsx' ? '../src/index.js' : pathToFileURL(join(DIST, 'index.js')).href
  )) as typeof import('../src/index.js');
  const cli =
    SERVE === 'tsx' ? ['--import', 'tsx', join(ROOT, 'src', 'cli', 'main.ts')] : [join(DIST, 'cli', 'main.js')];
  const codes = warmup + roundCount * claims;
  const round = ++rounds;
  const seeded = async (name: string) => {
    const url = storeUrl(dir, `${name}${round}`);
    await seedDibs(url, codes);
    return url;
  };
  const libStore = await seeded('lib');
  const lib = await openDibs(libStore);
  const servers: Server[] = [];
  try {
    const bare = join(ROOT, 'bench', 'lib', 'bare-fastify.mjs');
    const bareReady = /bare fastify is serving (http:\/\/\S+)/;
    const index = join(DIST, 'index.js');
    const wrapper = await startServer([bare], bareReady, undefined, {
      DIBS_STORE: await seeded('bare'),
      DIBS_INDEX: index,
    });
    servers.push(wrapper);
    const bareKey = `dibs_${randomBytes(8).toString('hex')}_${randomBytes(24).toString('base64url')}`;
    const keyed = await startServer([bare], bareReady, bareKey, {
      DIBS_STORE: await seeded('keyed'),
      DIBS_INDEX: index,
      DIBS_KEY_HASH: hashKey(bareKey),
    });
    servers.push(keyed);
    const store = await seeded('http');
    const keyStore = await openDibs(store);
    const { key } = await createApiKey(keyStore.backend.service, { name: 'bench', scopes: ['pools:claim'] });
    await keyStore.close();
    const serviceArgs = [...cli, 'serve', '--port', '0', '--no-jobs', '--rate-limit', '0'];
    const service = await startServer(
      [...serviceArgs, '--workers', String(WORKERS), '--store', store],
      /dibs is serving (http:\/\/\S+)/,
      key,
    );
    servers.push(service);
    let serviceB: Server | undefined;
    if (AB_DIST) {
      const storeB = await seeded('httpb');
      const keyStoreB = await openDibs(storeB);
      const { key: keyB } = await createApiKey(keyStoreB.backend.service, { name: 'bench', scopes: ['pools:claim'] });
      await keyStoreB.close();
      serviceB = await startServer(
        [
          join(AB_DIST, 'cli', 'main.js'),
          ...serviceArgs.slice(cli.length),
          '--workers',
          String(WORKERS),
          '--store',
          storeB,
        ],
        /dibs is serving (http:\/\/\S+)/,
        keyB,
      );
      servers.push(serviceB);
    }

    await timeOps(warmup, CONNECTIONS, (i) => lib.pools.claim('bench', `warm-${i}`));
    for (const server of servers) await driveClaims(server, warmup, 'warm');

    const runs: HttpRounds = { library: [], wrapper: [], keyed: [], service: [], serviceB: [] };
    const sides: (() => Promise<void>)[] = [
      async () => {
        const r = runs.library.length;
        const run = await timeOps(claims, CONNECTIONS, (i) => lib.pools.claim('bench', `r${r}-${i}`));
        runs.library.push(summarise('library (dibs.pools.claim)', run.latencies, run.seconds));
      },
      async () => void runs.wrapper.push(await driveClaims(wrapper, claims, `r${runs.wrapper.length}`)),
      async () => void runs.keyed.push(await driveClaims(keyed, claims, `r${runs.keyed.length}`)),
      async () => void runs.service.push(await driveClaims(service, claims, `r${runs.service.length}`)),
      ...(serviceB
        ? [async () => void runs.serviceB.push(await driveClaims(serviceB, claims, `r${runs.serviceB.length}`))]
        : []),
    ];
    for (let r = 0; r < roundCount; r++) for (const side of r % 2 ? [...sides].reverse() : sides) await side();
    return runs;
  } finally {
    for (const server of servers) server.stop();
    await lib.close();
  }
}

/** Drops the schemas and key prefixes the runs made (SQLite files go with their directory). */
export async function dropHttpStores(): Promise<void> {
  if (prefixes.length > 0) {
    const redis = new Redis(REDIS);
    for (const prefix of prefixes.splice(0)) {
      for await (const keys of redis.scanStream({ match: `${prefix}*`, count: 1000 }))
        if ((keys as string[]).length > 0) await redis.del(...(keys as string[]));
    }
    redis.disconnect();
  }
  for (const schema of schemas.splice(0)) {
    const client = new pg.Client({ connectionString: PG });
    await client.connect();
    await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await client.end();
  }
}

export async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-bench-http-'));
  try {
    const { library, libUsPerClaim, libServerUsPerClaim, floor, wrapper, service } = await httpSides(dir);
    const fmt = (x: number) => Math.round(x).toLocaleString('en-US');
    const storeName =
      BACKEND === 'postgres' ? 'PostgreSQL' : BACKEND === 'redis' ? 'Redis' : `SQLite (synchronous=${SYNC})`;
    const serverCell = (us: number) => (BACKEND === 'sqlite' ? 'in-process' : fmt(us));

    console.log(
      `\nHTTP claim vs library, ${storeName}${STORE_PARAMS ? ` (${STORE_PARAMS})` : ''}, ${CLAIMS} claims (after ${WARMUP} warm-up claims), ${CONNECTIONS} in flight, ${WORKERS} service worker(s), LOG_LEVEL=${LOG_LEVEL}, ${SERVE === 'tsx' ? 'TypeScript through tsx' : process.env.BENCH_DIST ? DIST : 'compiled dist/'}, load average ${loadavg()
        .map((l) => l.toFixed(1))
        .join(' ')}`,
    );
    console.log(
      '| run | requests | per second | p50 ms | p99 ms | vs library | CPU µs per request: Node process | store server | load generator |',
    );
    console.log('|---|---:|---:|---:|---:|---:|---:|---:|---:|');
    console.log(
      `| ${library.label} | ${library.ops} | ${fmt(library.perSecond)} | ${library.p50.toFixed(2)} | ${library.p99.toFixed(2)} | 1.00× | ${fmt(libUsPerClaim)} | ${serverCell(libServerUsPerClaim)} | (in the library's figure) |`,
    );
    const rows = [
      ['HTTP floor: bare Fastify route, no store', floor],
      ['bare Fastify route + dibs.pools.claim', wrapper],
      ['HTTP: dibs serve', service],
    ] as const;
    for (const [label, run] of rows) {
      console.log(
        `| ${label} | ${run.ok} | ${fmt(run.perSecond)} | ${run.p50.toFixed(2)} | ${run.p99.toFixed(2)} | ${(run.perSecond / library.perSecond).toFixed(2)}× | ${fmt(run.processUs)} | ${run === floor ? '–' : serverCell(run.serverUs)} | ${fmt(run.generatorUs)} |`,
      );
    }
    console.log(
      `\ndibs serve vs the bare route calling the library: ${(service.perSecond / wrapper.perSecond).toFixed(2)}× the throughput, ${fmt(service.processUs - wrapper.processUs)} µs more CPU per request (auth, tenants, validation, idempotency, logging, metrics)`,
    );
    console.log(
      `service CPU: ${fmt(service.busyPercent)} % of one core over the run, ${fmt(service.processUs)} µs per request (library: ${fmt(libUsPerClaim)} µs per claim, so HTTP adds ${fmt(service.processUs - libUsPerClaim)} µs; the bare route alone costs ${fmt(floor.processUs)} µs)`,
    );
    console.log(
      `service RSS: ${service.idleRss.toFixed(0)} MB idle, ${service.peakRss.toFixed(0)} MB peak under load; non-2xx ${service.non2xx}, errors ${service.errors}, timeouts ${service.timeouts}`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
    await dropHttpStores();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
