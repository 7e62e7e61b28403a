/**
 * Cold start of short-lived instances, dibs against a raw driver baseline measured in the same run.
 *
 * 1. Interleaved rounds (the latency comparison): ROUNDS rounds; in each, PER_ROUND processes one
 *    after another (SEQ_ALIVE alive at once, default 1) of each variant in turn — raw PostgreSQL,
 *    dibs PostgreSQL, raw Redis, dibs Redis. dibs processes load dibs from dist/, openDibs, make 5
 *    claims and close (cold-start-worker.mjs); raw processes import only `pg` / `ioredis`, connect
 *    and make the same 5 claims with the smallest equivalent statement or script
 *    (cold-start-raw-worker.mjs). Reported: open → 1st claim (dibs: openDibs, which loads the
 *    driver, plus the claim; raw: driver import + connect + claim) and process start → 1st claim,
 *    as the median of the round medians with their spread (min–max).
 * 2. The storm: PROCESSES processes (at most ALIVE alive at once) per target — PostgreSQL through a
 *    PgBouncer in transaction mode, Redis, and dibs/client over HTTP (the service over Redis),
 *    raw rows for the first two. Reports open and open-to-first-claim p50/p99, the most server
 *    connections in use, claims/s, errors and the audit.
 * `npm run bench -- cold-start`; SECTIONS=rounds,storm picks sections; the sizes above override.
 */
import { execFileSync, spawn } from 'node:child_process';
import { loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { openDibs, type Dibs } from '../src/index.js';
import { buildServer } from '../src/service/app.js';
import { createApiKey } from '../src/service/auth/keys.js';
import { startPgBouncer } from '../test/support/pgbouncer.js';
import { TEST_PG, tempPgStore } from '../test/support/postgres.js';
import { startRedis } from '../test/support/redis.js';
import { distIsFresh } from './lib/dist.js';
import { percentile } from './lib/measure.js';
import { Redis } from 'ioredis';

const PROCESSES = Number(process.env.PROCESSES ?? 200);
const ALIVE = Number(process.env.ALIVE ?? 50);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const PER_ROUND = Number(process.env.PER_ROUND ?? 10);
const SEQ_ALIVE = Number(process.env.SEQ_ALIVE ?? 1);
const SECTIONS = (process.env.SECTIONS ?? 'rounds,storm').split(',');
const CLAIMS = 5;
const root = fileURLToPath(new URL('../', import.meta.url));
const DIBS_WORKER = fileURLToPath(new URL('./cold-start-worker.mjs', import.meta.url));
const RAW_WORKER = fileURLToPath(new URL('./cold-start-raw-worker.mjs', import.meta.url));

interface WorkerResult {
  importMs: number;
  openMs: number;
  firstClaimMs: number | null;
  startToFirstMs: number | null;
  claims: number[];
  errors: number;
}

/** `count` processes of `worker`, at most `alive` at once; `sampleConnections` is polled every 25 ms. */
async function runProcesses(
  count: number,
  alive: number,
  worker: string,
  args: (i: number) => string[],
  sampleConnections?: () => Promise<number>,
) {
  const results: WorkerResult[] = [];
  let failedProcesses = 0;
  let maxConnections = 0;
  let sampling = sampleConnections !== undefined;
  const sampler = (async () => {
    while (sampling) {
      maxConnections = Math.max(maxConnections, await sampleConnections!().catch(() => 0));
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
  })();
  const started = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: alive }, async () => {
      while (next < count) {
        const i = next++;
        const out = await new Promise<string>((resolve) => {
          const child = spawn(process.execPath, [worker, ...args(i)], {
            cwd: root,
            stdio: ['ignore', 'pipe', 'inherit'],
          });
          let text = '';
          child.stdout.on('data', (chunk: Buffer) => {
            text += chunk.toString();
          });
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
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  sampling = false;
  await sampler;
  return { results, failedProcesses, seconds, maxConnections };
}

const sorted = (xs: number[]) => [...xs].sort((a, b) => a - b);
const median = (xs: number[]) => percentile(sorted(xs), 50);
const firsts = (rs: WorkerResult[]) => sorted(rs.filter((r) => r.firstClaimMs !== null).map((r) => r.firstClaimMs!));
const starts = (rs: WorkerResult[]) =>
  sorted(rs.filter((r) => r.startToFirstMs !== null).map((r) => r.startToFirstMs!));
const errorsOf = (run: Awaited<ReturnType<typeof runProcesses>>) =>
  run.results.reduce((n, r) => n + r.errors, 0) + run.failedProcesses * CLAIMS;
const load = () => loadavg()[0]!.toFixed(1);

function summary(run: Awaited<ReturnType<typeof runProcesses>>) {
  const { results } = run;
  const claims = results.reduce((n, r) => n + r.claims.length, 0);
  return {
    processes: results.length,
    errors: errorsOf(run),
    claims,
    claimsPerSecond: claims / run.seconds,
    importP50: median(results.map((r) => r.importMs)),
    openP50: median(results.map((r) => r.openMs)),
    openP99: percentile(sorted(results.map((r) => r.openMs)), 99),
    firstP50: percentile(firsts(results), 50),
    firstP99: percentile(firsts(results), 99),
    maxConnections: run.maxConnections,
  };
}

async function seed(dibs: Dibs, pool: string, codes: number): Promise<void> {
  await dibs.pools.create({ name: pool, perClaimantLimit: 1 });
  await dibs.pools.importCodes(
    pool,
    Array.from({ length: codes }, (_, i) => `${pool.toUpperCase()}-${i}`),
  );
}

async function verdict(dibs: Dibs, pool: string): Promise<string> {
  const [stats, violations] = [await dibs.pools.stats(pool), await dibs.pools.audit(pool)];
  return `claimed ${stats.claimed}, audit ${violations.length === 0 ? 'clean' : `${violations.length} violations`}`;
}

/** The raw baseline's codes: a table (PostgreSQL) or a set and a hash (Redis) per name. */
interface RawStore {
  seed(name: string, codes: number): Promise<void>;
  /** Codes taken and whether each was taken once by one claimant. */
  verdict(name: string): Promise<string>;
}

function rawPostgres(schema: string): RawStore & { close(): Promise<void> } {
  const client = new pg.Client({ connectionString: TEST_PG });
  const connected = client.connect();
  return {
    async seed(name, codes) {
      await connected;
      await client.query(`CREATE TABLE "${schema}"."${name}" (code text PRIMARY KEY, claimant text UNIQUE)`);
      await client.query(
        `INSERT INTO "${schema}"."${name}" (code) SELECT 'R-' || g FROM generate_series(1, $1::int) g`,
        [codes],
      );
    },
    async verdict(name) {
      const { rows } = await client.query<{ taken: number; claimants: number }>(
        `SELECT count(claimant)::int AS taken, count(DISTINCT claimant)::int AS claimants FROM "${schema}"."${name}"`,
      );
      const { taken, claimants } = rows[0]!;
      return `claimed ${taken}, ${taken === claimants ? 'one code per claimant' : `${taken - claimants} claimants twice`}`;
    },
    close: () => client.end(),
  };
}

function rawRedis(url: string): RawStore & { close(): void } {
  const client = new Redis(url);
  return {
    async seed(name, codes) {
      for (let i = 0; i < codes; i += 1000)
        await client.sadd(
          `{${name}}:free`,
          ...Array.from({ length: Math.min(1000, codes - i) }, (_, k) => `R-${i + k}`),
        );
    },
    async verdict(name) {
      const held = Object.values(await client.hgetall(`{${name}}:held`));
      return `claimed ${held.length}, ${new Set(held).size === held.length ? 'each code once' : `${held.length - new Set(held).size} codes twice`}`;
    },
    close: () => client.disconnect(),
  };
}

interface Variant {
  label: string;
  worker: string;
  args: (i: number) => string[];
}

/**
 * Interleaved rounds: every round runs PER_ROUND processes of each variant in turn, so a change
 * in the machine's load hits all variants alike; each variant's figure is the median of its
 * round medians, with the spread of those.
 */
async function rounds(variants: Variant[]): Promise<string[]> {
  const perRound = new Map(variants.map((v) => [v.label, [] as { first: number; start: number }[]]));
  const all = new Map(variants.map((v) => [v.label, [] as WorkerResult[]]));
  const errors = new Map(variants.map((v) => [v.label, 0]));
  const loads: string[] = [load()];
  for (let round = 0; round < ROUNDS; round++) {
    for (const v of variants) {
      const run = await runProcesses(PER_ROUND, SEQ_ALIVE, v.worker, (i) => v.args(round * PER_ROUND + i));
      perRound.get(v.label)!.push({ first: median(firsts(run.results)), start: median(starts(run.results)) });
      all.get(v.label)!.push(...run.results);
      errors.set(v.label, errors.get(v.label)! + errorsOf(run));
    }
    loads.push(load());
  }
  const spread = (xs: number[]) =>
    `${median(xs).toFixed(1)} (${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)})`;
  const lines = [
    `\nInterleaved rounds: ${ROUNDS} rounds × ${PER_ROUND} processes per variant, ${SEQ_ALIVE} alive at once; load average ${loads.join(' → ')} (times in ms; median of round medians (min–max of them); p99 over all processes)`,
    '| variant | processes | open → 1st claim | p99 | start → 1st claim | p99 | import p50 | errors |',
    '|---|---:|---:|---:|---:|---:|---:|---:|',
  ];
  for (const v of variants) {
    const r = perRound.get(v.label)!;
    const rs = all.get(v.label)!;
    lines.push(
      `| ${v.label} | ${rs.length} | ${spread(r.map((x) => x.first))} | ${percentile(firsts(rs), 99).toFixed(1)} | ${spread(r.map((x) => x.start))} | ${percentile(starts(rs), 99).toFixed(1)} | ${median(rs.map((x) => x.importMs)).toFixed(1)} | ${errors.get(v.label)} |`,
    );
  }
  // dibs − raw per round (the two ran back to back), then the median and spread of that.
  for (const [raw, dibs] of [
    [variants[0], variants[1]],
    [variants[2], variants[3]],
  ] as const) {
    if (!raw || !dibs) continue;
    const a = perRound.get(raw.label)!;
    const b = perRound.get(dibs.label)!;
    lines.push(
      `| ${dibs.label} − ${raw.label} | | ${spread(b.map((x, i) => x.first - a[i]!.first))} | | ${spread(b.map((x, i) => x.start - a[i]!.start))} | | | |`,
    );
  }
  return lines;
}

export async function main(): Promise<void> {
  if (!distIsFresh(root)) execFileSync(process.execPath, ['scripts/build.mjs'], { cwd: root, stdio: 'inherit' });
  const out: string[] = [];
  const storm: string[] = [];
  const row = (label: string, r: ReturnType<typeof summary>, audit: string, connections: string) =>
    storm.push(
      `| ${label} | ${r.processes} | ${r.openP50.toFixed(1)} / ${r.openP99.toFixed(1)} | ${r.firstP50.toFixed(1)} / ${r.firstP99.toFixed(1)} | ${r.importP50.toFixed(0)} | ${connections.replace('%', String(r.maxConnections))} | ${Math.round(r.claimsPerSecond)} | ${r.errors} | ${audit} |`,
    );
  const codes = Math.max(PROCESSES, ROUNDS * PER_ROUND) * CLAIMS + 200;
  const stormLoads: string[] = [];

  // PostgreSQL through PgBouncer (transaction mode, 20 server connections) and Redis (bench-owned).
  const bouncer = await startPgBouncer({ poolSize: 20 });
  const temp = tempPgStore();
  const redis = await startRedis();
  const watcher = new Redis(redis.url);
  const rawPg = rawPostgres(temp.schema);
  const rawRd = rawRedis(redis.url);
  try {
    const direct = await openDibs(temp.store);
    const lib = await openDibs(redis.url);
    const store = bouncer.url({ schema: temp.schema, pooler: 'transaction', poolSize: '2' });
    const rawPgUrl = bouncer.url();
    const serverConnections = async () => {
      const pools = await bouncer.admin<{
        database: string;
        sv_active: number;
        sv_idle: number;
        sv_used: number;
        sv_tested: number;
        sv_login: number;
      }>('SHOW POOLS');
      return pools
        .filter((p) => p.database !== 'pgbouncer')
        .reduce((n, p) => n + p.sv_active + p.sv_idle + p.sv_used + p.sv_tested + p.sv_login, 0);
    };
    const clients = async () => ((await watcher.client('LIST')) as string).trim().split('\n').length - 1;

    if (SECTIONS.includes('rounds')) {
      await seed(direct, 'seq', codes);
      await seed(lib, 'seq', codes);
      await rawPg.seed('raw_seq', codes);
      await rawRd.seed('raw-seq', codes);
      out.push(
        ...(await rounds([
          {
            label: 'raw pg (PgBouncer)',
            worker: RAW_WORKER,
            args: (i) => ['postgres', rawPgUrl, `${temp.schema}.raw_seq`, `rp${i}`],
          },
          {
            label: 'dibs PostgreSQL (PgBouncer)',
            worker: DIBS_WORKER,
            args: (i) => ['library', store, 'seq', `dp${i}`],
          },
          { label: 'raw ioredis', worker: RAW_WORKER, args: (i) => ['redis', redis.url, 'raw-seq', `rr${i}`] },
          { label: 'dibs Redis', worker: DIBS_WORKER, args: (i) => ['library', redis.url, 'seq', `dr${i}`] },
        ])),
      );
      out.push(
        `audit: dibs PostgreSQL ${await verdict(direct, 'seq')}; dibs Redis ${await verdict(lib, 'seq')}; raw pg ${await rawPg.verdict('raw_seq')}; raw Redis ${await rawRd.verdict('raw-seq')}`,
      );
    }

    if (SECTIONS.includes('storm')) {
      stormLoads.push(load());
      await seed(direct, 'cold', codes);
      await rawPg.seed('raw_cold', codes);
      const rawP = await runProcesses(
        PROCESSES,
        ALIVE,
        RAW_WORKER,
        (i) => ['postgres', rawPgUrl, `${temp.schema}.raw_cold`, `p${i}`],
        serverConnections,
      );
      row('raw pg via PgBouncer', summary(rawP), await rawPg.verdict('raw_cold'), '% server (pool of 20)');
      stormLoads.push(load());
      const dibsP = await runProcesses(
        PROCESSES,
        ALIVE,
        DIBS_WORKER,
        (i) => ['library', store, 'cold', `p${i}`],
        serverConnections,
      );
      row(
        'PostgreSQL via PgBouncer (transaction)',
        summary(dibsP),
        await verdict(direct, 'cold'),
        '% server (pool of 20)',
      );
      stormLoads.push(load());

      await seed(lib, 'cold-redis', codes);
      await rawRd.seed('raw-cold', codes);
      const rawR = await runProcesses(
        PROCESSES,
        ALIVE,
        RAW_WORKER,
        (i) => ['redis', redis.url, 'raw-cold', `p${i}`],
        clients,
      );
      row('raw ioredis', summary(rawR), await rawRd.verdict('raw-cold'), '% clients');
      stormLoads.push(load());
      const dibsR = await runProcesses(
        PROCESSES,
        ALIVE,
        DIBS_WORKER,
        (i) => ['library', redis.url, 'cold-redis', `p${i}`],
        clients,
      );
      row('Redis', summary(dibsR), await verdict(lib, 'cold-redis'), '% clients');
      stormLoads.push(load());

      await seed(lib, 'cold-http', codes);
      const app = buildServer({ dibs: lib, rateLimit: false, logger: false });
      await app.listen({ port: 0, host: '127.0.0.1' });
      try {
        const { port } = app.server.address() as { port: number };
        const apiKey = (await createApiKey(lib.backend.service, { name: 'bench', scopes: ['pools:claim'] })).key;
        const before = await clients();
        const h = await runProcesses(
          PROCESSES,
          ALIVE,
          DIBS_WORKER,
          (i) => ['client', `http://127.0.0.1:${port}`, 'cold-http', `p${i}`, apiKey],
          () => new Promise<number>((resolve) => app.server.getConnections((_, n) => resolve(n))),
        );
        row(
          'dibs/client over HTTP (service on Redis)',
          summary(h),
          await verdict(lib, 'cold-http'),
          `% HTTP, ${before} Redis`,
        );
      } finally {
        await app.close();
      }
      stormLoads.push(load());
    }
    await direct.close();
    await lib.close();
  } finally {
    await rawPg.close().catch(() => {});
    rawRd.close();
    watcher.disconnect();
    await temp.drop();
    await bouncer.stop();
    await redis.stop();
  }

  for (const line of out) console.log(line);
  if (storm.length) {
    console.log(
      `\nStorm: ${PROCESSES} processes, at most ${ALIVE} alive, ${CLAIMS} claims each (times in ms, from dist/); load average ${stormLoads.join(' → ')}`,
    );
    console.log(
      '| target | processes | open p50 / p99 | open → 1st claim p50 / p99 | import p50 | most connections | claims/s | errors | result |',
    );
    console.log('|---|---:|---:|---:|---:|---|---:|---:|---|');
    for (const r of storm) console.log(r);
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
