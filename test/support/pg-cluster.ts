/**
 * Throw-away PostgreSQL servers for failover tests: a primary and a streaming standby started
 * from the PostgreSQL server binaries (initdb, pg_basebackup, postgres) on free loopback ports in a
 * temp dir, the standby's replication link behind a DelayRelay. Each server runs in its own process
 * group so `kill()` takes the postmaster and every backend down at the same instant (SIGKILL of the
 * postmaster alone leaves backends serving). Everything is torn down by `stop()`, and on process
 * exit even when a test failed; temp dirs are removed.
 * Missing binaries: a failure under CI (`CI=true`), a loud skip elsewhere.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import {
  appendFileSync,
  chownSync,
  existsSync,
  mkdtempSync,
  openSync,
  readdirSync,
  readFileSync,
  rmSync,
} from 'node:fs';
import net from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { startDelayRelay, type DelayRelay } from './delay-relay.js';
import { runOrThrow } from './run-to-end.js';

const USER = 'dibs';

/** The PostgreSQL bin dir (newest installed version), or null. */
export function pgBinDir(): string | null {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return null;
  const versions = readdirSync(root)
    .filter((v) => existsSync(join(root, v, 'bin', 'pg_basebackup')) && existsSync(join(root, v, 'bin', 'initdb')))
    .sort((a, b) => Number(b) - Number(a));
  return versions[0] ? join(root, versions[0], 'bin') : null;
}

/** For `describe(..., { skip })`: false when the binaries are there; throws under CI when not. */
export function requirePgBinaries(): string | false {
  if (pgBinDir()) return false;
  const why =
    'PostgreSQL server binaries (initdb, pg_basebackup, postgres under /usr/lib/postgresql/<v>/bin) are not installed: apt-get install postgresql';
  if (process.env.CI === 'true') throw new Error(why);
  process.stderr.write(`\n*** SKIPPING failover tests: ${why}\n\n`);
  return why;
}

/** initdb refuses to run as root: as root the servers run as the `postgres` user. */
function owner(): { uid: number; gid: number } | undefined {
  if (userInfo().uid !== 0) return undefined;
  const line = readFileSync('/etc/passwd', 'utf8')
    .split('\n')
    .find((l) => l.startsWith('postgres:'));
  if (!line) throw new Error('running as root and there is no postgres user to run PostgreSQL as');
  const [, , uid, gid] = line.split(':');
  return { uid: Number(uid), gid: Number(gid) };
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/**
 * Runs initdb / pg_basebackup to their end (run-to-end.ts: never blocking the event loop, which a
 * storm of another suite beside it needs). The bound only catches a hang: initdb beside two
 * suites' worker start-ups at load ~60 took over the 60 s this was.
 */
async function run(bin: string, args: string[], ids: { uid: number; gid: number } | undefined): Promise<void> {
  await runOrThrow(`${bin} ${args.join(' ')}`, join(pgBinDir()!, bin), args, { timeoutMs: 300_000, ...ids });
}

export interface PgServer {
  readonly port: number;
  readonly dir: string;
  /** A connection URL to this server alone. */
  url(): string;
  query<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
  /** SIGKILL of the postmaster and every backend at once. */
  kill(): void;
  /** Whether the postmaster still runs (PostgreSQL shuts itself down on some faults). */
  alive(): boolean;
}

const live = new Set<ChildProcess>();
const dirs = new Set<string>();
let hooked = false;
function cleanupOnExit(): void {
  if (hooked) return;
  hooked = true;
  process.on('exit', () => {
    for (const child of live) killGroup(child);
    for (const dir of dirs) rmSync(dir, { recursive: true, force: true });
  });
}

function killGroup(child: ChildProcess): void {
  try {
    process.kill(-child.pid!, 'SIGKILL');
  } catch {
    /* already gone */
  }
  live.delete(child);
}

async function startServer(
  dir: string,
  port: number,
  root: string,
  ids: { uid: number; gid: number } | undefined,
  env?: NodeJS.ProcessEnv,
): Promise<PgServer> {
  const log = openSync(join(root, `${port}.log`), 'a');
  if (ids) chownSync(join(root, `${port}.log`), ids.uid, ids.gid);
  const child = spawn(join(pgBinDir()!, 'postgres'), ['-D', dir, '-p', String(port)], {
    ...ids,
    env: { ...process.env, ...env },
    detached: true,
    stdio: ['ignore', log, log],
  });
  live.add(child);
  const server: PgServer = {
    port,
    dir,
    url: () => `postgres://${USER}@127.0.0.1:${port}/postgres`,
    async query(text, values = []) {
      const client = new pg.Client({ connectionString: server.url(), connectionTimeoutMillis: 5000 });
      client.on('error', () => {});
      await client.connect();
      try {
        return (await client.query(text, values)).rows;
      } finally {
        await client.end().catch(() => {});
      }
    },
    kill: () => killGroup(child),
    alive: () => child.exitCode === null && child.signalCode === null,
  };
  for (let i = 0; ; i++) {
    if (child.exitCode !== null)
      throw new Error(
        `postgres on port ${port} exited (${child.exitCode}): ${readFileSync(join(root, `${port}.log`), 'utf8')}`,
      );
    try {
      await server.query('SELECT 1');
      return server;
    } catch (error) {
      if (i > 300) throw new Error(`postgres on port ${port} did not start in 30 s: ${String(error)}`);
      await sleep(100);
    }
  }
}

export interface ReplicatedPair {
  primary: PgServer;
  standby: PgServer;
  relay: DelayRelay;
  /** Switches the primary between a synchronous and an asynchronous standby (reload, no restart). */
  setSynchronous(sync: boolean): Promise<void>;
  /** The multi-host store URL (primary first), libpq style. */
  store(params: Record<string, string>): string;
  /** The old primary dies and its replication link is cut at the same instant; the standby is promoted. */
  failover(): Promise<{ promotedMs: number }>;
  stop(): Promise<void>;
}

/**
 * A primary and a standby streaming from it through a relay that delays each way by `delayMs`.
 * `sync`: the primary waits for the standby's flush before acknowledging a commit
 * (synchronous_standby_names = 'FIRST 1 (standby1)', synchronous_commit = on).
 */
export async function startReplicatedPair(options: {
  sync: boolean;
  delayMs: number;
  env?: NodeJS.ProcessEnv;
}): Promise<ReplicatedPair> {
  cleanupOnExit();
  const ids = owner();
  const root = mkdtempSync(join(tmpdir(), 'dibs-pg-failover-'));
  dirs.add(root);
  if (ids) chownSync(root, ids.uid, ids.gid);
  const servers: PgServer[] = [];
  let relay: DelayRelay | undefined;
  const stop = async () => {
    for (const server of servers) server.kill();
    await relay?.close();
    rmSync(root, { recursive: true, force: true });
    dirs.delete(root);
  };
  try {
    const [primaryPort, standbyPort] = [await freePort(), await freePort()];
    const primaryDir = join(root, 'primary');
    const standbyDir = join(root, 'standby');
    await run(
      'initdb',
      ['-D', primaryDir, '-U', USER, '--auth=trust', '-E', 'UTF8', '--no-sync', '--no-instructions'],
      ids,
    );
    // fsync=off cannot hide a loss here: the loss comes from WAL the standby never received (the
    // killed primary's files are never read again), not from an unflushed disk.
    appendFileSync(
      join(primaryDir, 'postgresql.conf'),
      [
        `listen_addresses = '127.0.0.1'`,
        `unix_socket_directories = '${root}'`,
        'shared_buffers = 16MB',
        'max_connections = 100',
        'fsync = off',
        'full_page_writes = off',
        'wal_level = replica',
        'max_wal_senders = 4',
        'hot_standby = on',
        'wal_sender_timeout = 10s',
        'wal_receiver_status_interval = 1s',
        // the standby retries its lost link every 100 ms (default 5 s), which a promotion may wait out
        'wal_retrieve_retry_interval = 100ms',
        'log_min_messages = warning',
        '',
      ].join('\n'),
    );
    const primary = await startServer(primaryDir, primaryPort, root, ids, options.env);
    servers.push(primary);
    relay = await startDelayRelay({ host: '127.0.0.1', port: primaryPort }, options.delayMs);
    await run(
      'pg_basebackup',
      ['-h', '127.0.0.1', '-p', String(primaryPort), '-U', USER, '-D', standbyDir, '-X', 'stream', '-R', '--no-sync'],
      ids,
    );
    // -R pointed the standby at the primary itself: the replication link goes through the relay
    appendFileSync(
      join(standbyDir, 'postgresql.auto.conf'),
      `primary_conninfo = 'host=127.0.0.1 port=${relay.port} user=${USER} application_name=standby1'\n`,
    );
    const standby = await startServer(standbyDir, standbyPort, root, ids, options.env);
    servers.push(standby);
    for (let i = 0; ; i++) {
      const rows = await primary.query<{ n: number }>(
        `SELECT count(*)::int AS n FROM pg_stat_replication WHERE application_name = 'standby1' AND state = 'streaming'`,
      );
      if (rows[0]!.n === 1) break;
      if (i > 300) throw new Error('the standby did not start streaming in 30 s');
      await sleep(100);
    }
    const setSynchronous = async (sync: boolean) => {
      // Only on the primary (ALTER SYSTEM after the base backup): the promoted standby must not wait for a standby of its own.
      await primary.query(`ALTER SYSTEM SET synchronous_standby_names = '${sync ? 'FIRST 1 (standby1)' : ''}'`);
      await primary.query(`ALTER SYSTEM SET synchronous_commit = 'on'`);
      await primary.query('SELECT pg_reload_conf()');
      for (let i = 0; ; i++) {
        const rows = await primary.query<{ state: string }>(
          `SELECT sync_state AS state FROM pg_stat_replication WHERE application_name = 'standby1'`,
        );
        if (rows[0]?.state === (sync ? 'sync' : 'async')) break;
        if (i > 100) throw new Error(`the standby is not ${sync ? 'sync' : 'async'} after 10 s`);
        await sleep(100);
      }
    };
    await setSynchronous(options.sync);
    return {
      primary,
      standby,
      relay,
      setSynchronous,
      store: (params) => {
        const query = new URLSearchParams({ target_session_attrs: 'read-write', ...params });
        return `postgres://${USER}@127.0.0.1:${primaryPort},127.0.0.1:${standbyPort}/postgres?${query}`;
      },
      async failover() {
        relay!.cut();
        primary.kill();
        const started = performance.now();
        await standby.query('SELECT pg_promote(true, 60)');
        return { promotedMs: performance.now() - started };
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

export interface OwnedPgServer extends PgServer {
  /** Starts the server again on the same port and files (a supervisor's restart). */
  restart(): Promise<void>;
  /** The server's log so far. */
  log(): string;
  stop(): Promise<void>;
}

/**
 * One PostgreSQL server on a free loopback port; `conf` lines are appended to postgresql.conf,
 * `waldir` puts its WAL outside the data directory (initdb -X), e.g. on a small disk, and
 * `walSegmentMb` sets the WAL segment size (initdb --wal-segsize).
 */
export async function startPgServer(
  options: { waldir?: string; walSegmentMb?: number; conf?: string[] } = {},
): Promise<OwnedPgServer> {
  cleanupOnExit();
  const ids = owner();
  const root = mkdtempSync(join(tmpdir(), 'dibs-pg-'));
  dirs.add(root);
  if (ids) chownSync(root, ids.uid, ids.gid);
  const dir = join(root, 'data');
  let server: PgServer | undefined;
  const stop = async () => {
    server?.kill();
    rmSync(root, { recursive: true, force: true });
    dirs.delete(root);
  };
  try {
    const port = await freePort();
    await run(
      'initdb',
      [
        '-D',
        dir,
        '-U',
        USER,
        '--auth=trust',
        '-E',
        'UTF8',
        '--no-sync',
        '--no-instructions',
        ...(options.waldir ? ['-X', options.waldir] : []),
        ...(options.walSegmentMb ? [`--wal-segsize=${options.walSegmentMb}`] : []),
      ],
      ids,
    );
    appendFileSync(
      join(dir, 'postgresql.conf'),
      [
        `listen_addresses = '127.0.0.1'`,
        `unix_socket_directories = '${root}'`,
        'shared_buffers = 16MB',
        'max_connections = 100',
        'log_min_messages = warning',
        ...(options.conf ?? []),
        '',
      ].join('\n'),
    );
    server = await startServer(dir, port, root, ids);
    const owned: OwnedPgServer = {
      port,
      dir,
      url: () => server!.url(),
      query: (text, values) => server!.query(text, values),
      kill: () => server!.kill(),
      alive: () => server!.alive(),
      restart: async () => {
        server!.kill();
        server = await startServer(dir, port, root, ids);
      },
      log: () => readFileSync(join(root, `${port}.log`), 'utf8'),
      stop,
    };
    return owned;
  } catch (error) {
    await stop();
    throw error;
  }
}
