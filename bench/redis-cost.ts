/**
 * What one claim costs, per call, on each side of the wire: the minimal claim script (ZPOPMIN +
 * HSET, bench/redis.ts) vs dibs' claim.lua called raw vs `dibs.pools.claim`, on a PRIVATE
 * redis-server started for the run (a free port, no persistence), so that `INFO commandstats`
 * counts this run's calls only.
 *
 * Per call: Redis' own µs for EVALSHA (commandstats: wall time inside the command — a loaded
 * machine pre-empting Redis inflates it), Redis' CPU (from /proc/<pid>/schedstat: on-CPU time of
 * the server, command plus network I/O, not inflated by waiting for a core; Linux only) and this
 * Node process' CPU (process.cpuUsage: ioredis' encoding and parsing, and for dibs the library).
 * Interleaved rounds on fresh pools, median (min–max).
 *
 *   npm run bench -- redis-cost        (REDIS_COST_CALLS per run, default 20,000; REDIS_COST_ROUNDS,
 *                                       default 5; REDIS_SERVER, default redis-server on PATH)
 */
import { spawn } from 'node:child_process';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import { createServer } from 'node:net';
import { loadavg } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { openDibs } from '../src/index.js';
import { poolKeys } from '../src/backends/redis/keys.js';
import { runScript } from '../src/backends/redis/scripts.js';
import { spread, type Spread } from './lib/rounds.js';
import { seedDibs } from './lib/seed.js';
import { RAW_SCRIPT, seedRaw } from './redis.js';

const CALLS = Number(process.env.REDIS_COST_CALLS ?? 20_000);
const ROUNDS = Number(process.env.REDIS_COST_ROUNDS ?? 5);
const IN_FLIGHT = 32;

interface Cost {
  commandUs: number;
  serverCpuUs: number;
  nodeCpuUs: number;
}

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** On-CPU nanoseconds of every thread of `pid` (NaN where /proc has no schedstat). */
function cpuNs(pid: number): number {
  const dir = `/proc/${pid}/task`;
  if (!existsSync(dir)) return Number.NaN;
  return readdirSync(dir).reduce(
    (total, tid) => total + Number(readFileSync(`${dir}/${tid}/schedstat`, 'utf8').split(' ')[0]),
    0,
  );
}

async function evalshaStats(client: Redis): Promise<{ calls: number; usec: number }> {
  const match = /cmdstat_evalsha:calls=(\d+),usec=(\d+)/.exec((await client.info('commandstats')) as string);
  return match ? { calls: Number(match[1]), usec: Number(match[2]) } : { calls: 0, usec: 0 };
}

/** `CALLS` calls of `call`, `IN_FLIGHT` at a time, with the per-call costs. */
async function measure(client: Redis, serverPid: number, call: (i: number) => Promise<unknown>): Promise<Cost> {
  await client.config('RESETSTAT');
  const server0 = cpuNs(serverPid);
  const node0 = process.cpuUsage();
  const inFlight: Promise<unknown>[] = [];
  for (let i = 0; i < CALLS; i++) {
    inFlight.push(call(i));
    if (inFlight.length >= IN_FLIGHT) await Promise.all(inFlight.splice(0));
  }
  await Promise.all(inFlight);
  const node = process.cpuUsage(node0);
  const serverCpuUs = (cpuNs(serverPid) - server0) / CALLS / 1000;
  const stats = await evalshaStats(client);
  return { commandUs: stats.usec / stats.calls, serverCpuUs, nodeCpuUs: (node.user + node.system) / CALLS };
}

async function startServer(): Promise<{ url: string; pid: number; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawn(
    process.env.REDIS_SERVER ?? 'redis-server',
    ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'],
    { stdio: 'ignore' },
  );
  let spawnError: Error | undefined;
  child.once('error', (error) => {
    spawnError = error; // no redis-server binary: reported below, not an unhandled event
  });
  const stop = async () => {
    if (child.exitCode !== null) return;
    child.kill('SIGTERM');
    await Promise.race([new Promise((resolve) => child.once('exit', resolve)), sleep(5000)]);
    if (child.exitCode === null) child.kill('SIGKILL');
  };
  const url = `redis://127.0.0.1:${port}/0`;
  for (let tries = 0; ; tries++) {
    if (spawnError) throw new Error(`cannot start redis-server: ${spawnError.message}`);
    const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => undefined); // refused until the server listens: retried here
    try {
      await probe.connect();
      await probe.ping();
      probe.disconnect();
      return { url, pid: child.pid!, stop };
    } catch (error) {
      probe.disconnect();
      if (tries >= 50) {
        await stop();
        throw new Error(`redis-server did not start on port ${port}: ${(error as Error).message}`);
      }
      await sleep(100);
    }
  }
}

export async function main(): Promise<void> {
  const server = await startServer();
  const client = new Redis(server.url);
  const runs: Record<'minimal' | 'script' | 'dibs', Cost[]> = { minimal: [], script: [], dibs: [] };
  const load = loadavg()[0]!.toFixed(1);
  try {
    for (let round = 0; round < ROUNDS; round++) {
      await client.flushall();
      const sha = (await client.script('LOAD', RAW_SCRIPT)) as string;
      await seedRaw(client, 'raw', CALLS);
      runs.minimal.push(
        await measure(client, server.pid, (i) => client.evalsha(sha, 2, '{raw}:free', '{raw}:holders', `user-${i}`)),
      );
      await seedDibs(`${server.url}?prefix=script`, CALLS);
      const k = poolKeys('script', 'bench');
      const keys = [k.pool, k.free, k.codes, k.held, k.claimKeys, k.events, k.parked, k.claimed];
      runs.script.push(
        await measure(client, server.pid, (i) => runScript(client, 'claim', keys, [`user-${i}`, 1, ''])),
      );
      await seedDibs(`${server.url}?prefix=dibs`, CALLS + 1);
      const dibs = await openDibs(`${server.url}?prefix=dibs`);
      try {
        await dibs.pools.claim('bench', 'warm-up'); // connection and script cache warm before timing
        runs.dibs.push(await measure(client, server.pid, (i) => dibs.pools.claim('bench', `user-${i}`)));
      } finally {
        await dibs.close();
      }
    }
  } finally {
    client.disconnect();
    await server.stop();
  }
  const show = (s: Spread) => `${s.median.toFixed(1)} (${s.min.toFixed(1)}–${s.max.toFixed(1)})`;
  console.log(
    `Per claim, ${ROUNDS} interleaved rounds × ${CALLS} calls, ${IN_FLIGHT} in flight, private redis-server; load average ${load} → ${loadavg()[0]!.toFixed(1)}`,
  );
  console.log('| call | EVALSHA µs (commandstats) | Redis CPU µs | Node CPU µs | Redis + Node vs minimal |');
  console.log('|---|---:|---:|---:|---:|');
  const total = (c: Cost) => c.serverCpuUs + c.nodeCpuUs;
  const labels = {
    minimal: 'minimal claim script',
    script: "dibs' claim.lua, raw EVALSHA",
    dibs: 'dibs.pools.claim',
  } as const;
  for (const side of ['minimal', 'script', 'dibs'] as const) {
    const costs = runs[side];
    const ratio = spread(costs.map((c, i) => total(runs.minimal[i]!) / total(c)));
    console.log(
      `| ${labels[side]} | ${show(spread(costs.map((c) => c.commandUs)))} | ${show(spread(costs.map((c) => c.serverCpuUs)))} | ${show(spread(costs.map((c) => c.nodeCpuUs)))} | ${ratio.median.toFixed(2)}× (${ratio.min.toFixed(2)}–${ratio.max.toFixed(2)}×) |`,
    );
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main();
