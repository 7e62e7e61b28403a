/**
 * Test-owned stores whose clock the test moves. `jump(60)` / `jump(-3600)` sets CLOCK_REALTIME of
 * the whole server to the real clock plus that many seconds (every backend / thread at once),
 * while CLOCK_MONOTONIC stays real. On 127.0.0.1, a free port and a temp dir; `stop()` removes
 * everything.
 *
 * - PostgreSQL runs under libfaketime (Debian package `faketime`) with a control file it re-reads
 *   on every clock read.
 * - redis-server runs with test/support/clockshift.c preloaded (compiled here with `cc`):
 *   libfaketime 0.9.10 deadlocks Debian's redis-server at start (its lazy initialisation
 *   re-enters itself inside jemalloc's start-up; the C file says how), so Redis gets a shim that
 *   never allocates and moves only the wall clock.
 * - A 3-master Redis Cluster gets the same shim on every node, each with its own control file, so
 *   a test moves all clocks at once or only the one of the node that owns a key's slot.
 */
import { spawn, spawnSync } from 'node:child_process';
import {
  appendFileSync,
  chmodSync,
  chownSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import pg from 'pg';
import { freePort, type OwnedCluster, redisServerInstalled, startCluster, startRedis } from './redis.js';
import { runOrThrow } from './run-to-end.js';

const LIB = '/usr/lib/x86_64-linux-gnu/faketime/libfaketime.so.1';
const PG_BIN = '/usr/lib/postgresql/15/bin';

/** Why the clock tests cannot run, or null; under CI a missing prerequisite throws. */
export function faketimeUnavailable(): string | null {
  let why: string | null = null;
  if (process.getuid?.() !== 0) why = 'not root (the test PostgreSQL runs as user postgres)';
  else if (!existsSync(LIB)) why = `${LIB} is missing (apt-get install faketime)`;
  else if (!existsSync(`${PG_BIN}/initdb`)) why = `${PG_BIN}/initdb is missing (apt-get install postgresql-15)`;
  if (why && process.env.CI === 'true') throw new Error(`store clock tests (CI=true): ${why}`);
  if (why) process.stderr.write(`\n*** SKIPPING store clock tests: ${why}\n\n`);
  return why;
}

/**
 * Why the clockshift tests cannot run, or null; under CI a missing prerequisite throws. They need a
 * C compiler, and redis-server unless `redis: false` (SQLite, the Firestore emulator).
 */
export function clockShiftUnavailable(options: { redis?: boolean } = {}): string | null {
  let why: string | null = null;
  if (spawnSync('cc', ['--version']).status !== 0)
    why = 'no C compiler `cc` to build test/support/clockshift.c (apt-get install gcc libc6-dev)';
  else if (options.redis !== false && !redisServerInstalled()) why = 'redis-server is not installed';
  if (why && process.env.CI === 'true') throw new Error(`clockshift store clock tests (CI=true): ${why}`);
  if (why) process.stderr.write(`\n*** SKIPPING clockshift store clock tests: ${why}\n\n`);
  return why;
}

export interface FakeClockStore {
  url: string;
  /** Sets the server's clock to the real clock plus `offsetS` seconds (negative: behind), at real speed. */
  jump(offsetS: number): void;
  /**
   * From now on the server's clock runs at `factor` × real time (1.5: fast, 0.5: slow), without a
   * jump at the change. Only on stores run under clockshift (not the libfaketime PostgreSQL).
   */
  rate?(factor: number): void;
  /** The server's own clock (ms since the epoch), as it answers now. */
  now(): Promise<number>;
  stop(): Promise<void>;
}

export interface FakeClockPostgres extends FakeClockStore {
  query<R extends pg.QueryResultRow>(text: string): Promise<R[]>;
}

let shim: string | undefined;
/** Compiles clockshift.c once per test process. */
export function clockShiftLibrary(): string {
  if (shim && existsSync(shim)) return shim;
  const dir = mkdtempSync(join(tmpdir(), 'dibs-clockshift-'));
  // readable by servers that drop root (PostgreSQL runs as user postgres)
  chmodSync(dir, 0o755);
  const out = join(dir, 'clockshift.so');
  const source = new URL('./clockshift.c', import.meta.url).pathname;
  const built = spawnSync('cc', ['-O2', '-Wall', '-Werror', '-shared', '-fPIC', '-o', out, source], {
    encoding: 'utf8',
    timeout: 60_000,
  });
  if (built.status !== 0) throw new Error(`cc clockshift.c failed: ${built.stderr}`);
  process.once('exit', () => rmSync(join(out, '..'), { recursive: true, force: true }));
  return (shim = out);
}

export interface ClockControl {
  /** The environment that runs a process on this clock (LD_PRELOAD and the control file). */
  env: Record<string, string>;
  /** The argv prefix that does the same (`env LD_PRELOAD=… CLOCKSHIFT_FILE=…`). */
  prefix: string[];
  /** The clock reads real + `offsetS`, at real speed. */
  jump(offsetS: number): void;
  /** The clock runs at `factor` × real time from now on, continuing from where it reads now. */
  rate(factor: number): void;
}

/**
 * The control file of one clock-shifted process (or a group sharing it) and the functions that
 * move its clock. The file is written whole then renamed: a reader never sees half an offset.
 * The test process itself runs on the real clock, so its Date.now() is the true realtime the
 * shim's anchor is measured on.
 */
export function clockShiftControl(dir: string, name = 'offset-ms'): ClockControl {
  const control = join(dir, name);
  let state = { offsetMs: 0, ratePm: 1000, anchorMs: 0 };
  const write = () => {
    const { offsetMs, ratePm, anchorMs } = state;
    const text = ratePm === 1000 ? `${offsetMs >= 0 ? '+' : ''}${offsetMs}` : `${offsetMs} ${ratePm} ${anchorMs}`;
    writeFileSync(`${control}.next`, `${text}\n`);
    chmodSync(`${control}.next`, 0o644);
    renameSync(`${control}.next`, control);
  };
  const jump = (offsetS: number) => {
    state = { offsetMs: Math.round(offsetS * 1000), ratePm: 1000, anchorMs: 0 };
    write();
  };
  const rate = (factor: number) => {
    const now = Date.now();
    // the offset the clock has reached by now, so that the change of speed does not jump it
    const reached = state.offsetMs + Math.trunc(((now - state.anchorMs) * (state.ratePm - 1000)) / 1000);
    state = { offsetMs: reached, ratePm: Math.round(factor * 1000), anchorMs: now };
    write();
  };
  jump(0);
  const env = { LD_PRELOAD: clockShiftLibrary(), CLOCKSHIFT_FILE: control };
  return { env, prefix: ['env', `LD_PRELOAD=${env.LD_PRELOAD}`, `CLOCKSHIFT_FILE=${control}`], jump, rate };
}

/** A Redis node's own clock (TIME, ms since the epoch). */
async function redisTime(url: string): Promise<number> {
  const client = new Redis(url, { maxRetriesPerRequest: 1 });
  try {
    const [s, us] = (await client.time()) as [string | number, string | number];
    return Number(s) * 1000 + Number(us) / 1000;
  } finally {
    client.disconnect();
  }
}

/** A redis-server (single node, no persistence) whose wall clock the test moves. */
export async function startFakeClockRedis(): Promise<FakeClockStore> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-clockshift-redis-'));
  const { env, jump, rate } = clockShiftControl(dir);
  const owned = await startRedis(['--appendonly', 'no'], dir, env);
  return { url: owned.url, jump, rate, now: () => redisTime(owned.url), stop: () => owned.stop() };
}

export interface FakeClockCluster extends FakeClockStore {
  /** Moves the clock of the master that owns `key`'s slot only (the others keep the real clock). */
  jumpOwnerOf(key: string, offsetS: number): void;
  /** The clock of the master that owns `key`'s slot. */
  nowOf(key: string): Promise<number>;
  cluster: OwnedCluster;
}

/**
 * A 3-master Redis Cluster (no persistence) with the clock shift preloaded on every node, each with
 * its own control file: `jump` moves all three clocks at once, `jumpOwnerOf` one node's.
 */
export async function startFakeClockCluster(): Promise<FakeClockCluster> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-clockshift-cluster-'));
  const controls = [0, 1, 2].map((i) => {
    mkdirSync(join(dir, `n${i}`));
    return clockShiftControl(join(dir, `n${i}`));
  });
  const cluster = await startCluster(['--appendonly', 'no'], { envFor: (i) => controls[i]!.env });
  const controlOf = (key: string) => controls[cluster.nodes.indexOf(cluster.ownerOf(key))]!;
  return {
    url: cluster.url,
    cluster,
    jump: (offsetS) => {
      for (const control of controls) control.jump(offsetS);
    },
    rate: (factor) => {
      for (const control of controls) control.rate(factor);
    },
    jumpOwnerOf: (key, offsetS) => controlOf(key).jump(offsetS),
    now: () => redisTime(cluster.nodes[0]!.url),
    nowOf: (key) => redisTime(cluster.ownerOf(key).url),
    stop: async () => {
      await cluster.stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A test-owned PostgreSQL whose clock the test moves: under libfaketime by default, or with
 * `clockshift: true` under test/support/clockshift.c (which can also change the clock's rate).
 */
export async function startFakeClockPostgres(options: { clockshift?: boolean } = {}): Promise<FakeClockPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-faketime-pg-'));
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const [uid, gid] = [id('-u'), id('-g')];
  chownSync(dir, uid, gid);
  chmodSync(dir, 0o700);
  const asPostgres = [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups'];
  await runOrThrow(
    'initdb',
    'setpriv',
    [...asPostgres, `${PG_BIN}/initdb`, '-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync'],
    // only catches a hang: at load ~60 initdb took over 60 s
    { timeoutMs: 300_000 },
  );
  appendFileSync(
    join(dir, 'data', 'postgresql.conf'),
    '\nfsync = off\nsynchronous_commit = off\nmax_connections = 60\nshared_buffers = 16MB\nlog_min_messages = fatal\n',
  );
  const control = join(dir, 'faketime');
  writeFileSync(control, '+0\n');
  chmodSync(control, 0o644);
  const shifted = options.clockshift ? clockShiftControl(dir) : undefined;
  const port = await freePort();
  // libfaketime is loaded after the switch to user postgres (its semaphore must belong to it).
  const preload = shifted
    ? shifted.prefix.slice(1)
    : [
        `LD_PRELOAD=${LIB}`,
        `FAKETIME_TIMESTAMP_FILE=${control}`,
        'FAKETIME_NO_CACHE=1',
        'FAKETIME_DONT_FAKE_MONOTONIC=1',
      ];
  const child = spawn(
    'setpriv',
    [
      ...asPostgres,
      'env',
      ...preload,
      `${PG_BIN}/postgres`,
      '-D',
      join(dir, 'data'),
      '-p',
      String(port),
      '-c',
      'listen_addresses=127.0.0.1',
      '-c',
      `unix_socket_directories=${dir}`,
    ],
    { stdio: 'ignore' },
  );
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const query = async <R extends pg.QueryResultRow>(text: string) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return (await client.query<R>(text)).rows;
    } finally {
      await client.end();
    }
  };
  const exited = () =>
    new Promise<void>((resolve) =>
      child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve()),
    );
  const stop = async () => {
    child.kill('SIGQUIT');
    await Promise.race([exited(), sleep(5000)]);
    child.kill('SIGKILL');
    await exited();
    rmSync(dir, { recursive: true, force: true });
  };
  for (const deadline = Date.now() + 30_000; ; await sleep(100)) {
    if (
      await query('SELECT 1').then(
        () => true,
        () => false,
      )
    )
      break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error('PostgreSQL under libfaketime did not start');
    }
  }
  const now = async () => (await query<{ t: Date }>('SELECT clock_timestamp() AS t'))[0]!.t.getTime();
  if (shifted) return { url, jump: shifted.jump, rate: shifted.rate, now, query, stop };
  return { url, jump: (offsetS) => writeFileSync(control, `${offsetS >= 0 ? '+' : ''}${offsetS}\n`), now, query, stop };
}
