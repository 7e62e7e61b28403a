/**
 * Test-owned stores on a "host" of test/support/netns.ts: a PostgreSQL (initdb in a temp dir,
 * run as the `postgres` user) and a redis-server, listening inside the host's namespace on every
 * address there (its veths and its own loopback) and on a Unix socket in their temp dir — the
 * test process, which stays outside the namespaces, reaches them through that socket only.
 * Stopped (SIGKILL, then the temp dir removed) by `stop()`; the namespace teardown kills them too.
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { connect, createServer, type Socket } from 'node:net';
import pg from 'pg';
import { Redis } from 'ioredis';
import type { Host } from './netns.js';
import { runOrThrow } from './run-to-end.js';

const PG_BIN = '/usr/lib/postgresql/15/bin';

function postgresUser(): { uid: number; gid: number } {
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  return { uid: id('-u'), gid: id('-g') };
}

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check().catch(() => false))) {
    if (Date.now() > deadline) throw new Error(`${what} did not come up within ${timeoutMs} ms`);
    await sleep(100);
  }
}

function exited(child: ChildProcess): Promise<void> {
  return new Promise((resolve) =>
    child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve()),
  );
}

export interface HostPostgres {
  /** The Unix-socket directory: `{ host: dir, port: 5432 }` from outside the namespaces. */
  dir: string;
  port: number;
  /** A pg connection string over the Unix socket (for the test process). */
  localUrl: string;
  /** A connection string over TCP to `address` (for processes on other hosts). */
  urlAt(address: string): string;
  admin<R extends pg.QueryResultRow>(text: string, values?: unknown[]): Promise<R[]>;
  stop(): Promise<void>;
}

/** A throwaway PostgreSQL 15 cluster (fsync off: these tests are about networks, not disks). */
export async function startPostgresOn(host: Host, extra: string[] = []): Promise<HostPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-netns-pg-'));
  const { uid, gid } = postgresUser();
  chownSync(dir, uid, gid);
  chmodSync(dir, 0o700);
  await runOrThrow(
    'initdb',
    'setpriv',
    [
      `--reuid=${uid}`,
      `--regid=${gid}`,
      '--clear-groups',
      `${PG_BIN}/initdb`,
      '-D',
      join(dir, 'data'),
      '-A',
      'trust',
      '-U',
      'postgres',
      '--no-sync',
      '-E',
      'UTF8',
    ],
    // only catches a hang: at load ~60 initdb took over 60 s
    { timeoutMs: 300_000 },
  );
  // The links' private range only exists inside the namespaces.
  appendFileSync(join(dir, 'data', 'pg_hba.conf'), 'host all all 10.213.0.0/16 trust\n');
  const port = 5432;
  const child = host.spawn(
    'setpriv',
    [
      `--reuid=${uid}`,
      `--regid=${gid}`,
      '--clear-groups',
      `${PG_BIN}/postgres`,
      '-D',
      join(dir, 'data'),
      '-p',
      String(port),
      '-c',
      'listen_addresses=*',
      '-c',
      `unix_socket_directories=${dir}`,
      '-c',
      'fsync=off',
      '-c',
      'synchronous_commit=off',
      '-c',
      'full_page_writes=off',
      '-c',
      'max_connections=60',
      '-c',
      'shared_buffers=16MB',
      '-c',
      'log_min_messages=fatal',
      ...extra,
    ],
    { stdio: 'ignore' },
  );
  const localUrl = `postgres://postgres@localhost:${port}/postgres?host=${encodeURIComponent(dir)}`;
  const admin = async <R extends pg.QueryResultRow>(text: string, values: unknown[] = []) => {
    const client = new pg.Client({ host: dir, port, user: 'postgres', database: 'postgres' });
    await client.connect();
    try {
      return (await client.query<R>(text, values)).rows;
    } finally {
      await client.end();
    }
  };
  try {
    await until('postgres in the namespace', async () => (await admin('SELECT 1')).length === 1);
  } catch (error) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    dir,
    port,
    localUrl,
    urlAt: (address) => `postgres://postgres@${address}:${port}/postgres`,
    admin,
    async stop() {
      // SIGQUIT: immediate shutdown — the postmaster takes its backends down with it (a SIGKILL
      // would leave them to notice its death on their own).
      child.kill('SIGQUIT');
      await Promise.race([exited(child), sleep(5000)]);
      child.kill('SIGKILL');
      await exited(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface HostRedis {
  dir: string;
  socket: string;
  port: number;
  urlAt(address: string): string;
  /** A client over the Unix socket (for the test process). */
  client(): Redis;
  process: ChildProcess;
  stop(): Promise<void>;
}

export async function startRedisOn(host: Host, extra: string[] = [], wrapper: string[] = []): Promise<HostRedis> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-netns-redis-'));
  const socket = join(dir, 'redis.sock');
  const port = 6379;
  const argv = [
    'redis-server',
    '--port',
    String(port),
    '--bind',
    '0.0.0.0',
    '--protected-mode',
    'no',
    '--unixsocket',
    socket,
    '--unixsocketperm',
    '700',
    '--dir',
    dir,
    '--save',
    '',
    '--appendonly',
    'no',
    '--daemonize',
    'no',
    '--logfile',
    join(dir, 'redis.log'),
    ...extra,
  ];
  const all = [...wrapper, ...argv];
  const child = host.spawn(all[0]!, all.slice(1), { stdio: 'ignore' });
  const client = () => {
    const c = new Redis({ path: socket, lazyConnect: true, maxRetriesPerRequest: 1, retryStrategy: () => null });
    c.on('error', () => undefined);
    return c;
  };
  try {
    await until('redis in the namespace', async () => {
      const c = client();
      try {
        await c.connect();
        return (await c.ping()) === 'PONG';
      } finally {
        c.disconnect();
      }
    });
  } catch (error) {
    child.kill('SIGKILL');
    rmSync(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    dir,
    socket,
    port,
    process: child,
    urlAt: (address) => `redis://${address}:${port}/0`,
    client,
    async stop() {
      child.kill('SIGKILL');
      await exited(child);
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

/**
 * A loopback TCP port (127.0.0.1, outside the namespaces) forwarding to a store's Unix socket, for
 * clients that only speak TCP (dibs' Redis URLs). Only the test process uses it.
 */
export async function unixRelay(socketPath: string, listenPort = 0): Promise<{ port: number; close(): Promise<void> }> {
  const open = new Set<Socket>();
  const server = createServer((inbound) => {
    const outbound = connect(socketPath);
    open.add(inbound).add(outbound);
    const end = () => {
      inbound.destroy();
      outbound.destroy();
      open.delete(inbound);
      open.delete(outbound);
    };
    inbound.on('error', end).on('close', end);
    outbound.on('error', end).on('close', end);
    inbound.pipe(outbound).pipe(inbound);
  });
  await new Promise<void>((resolve, reject) => server.once('error', reject).listen(listenPort, '127.0.0.1', resolve));
  return {
    port: (server.address() as { port: number }).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const s of open) s.destroy();
        server.close(() => resolve());
      }),
  };
}
