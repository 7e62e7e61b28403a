/**
 * A test-owned PgBouncer in transaction-pooling mode in front of the test PostgreSQL: its own
 * config in a temp directory, a free loopback port, auth_type=trust, started and stopped by the
 * test (bounded: start waits at most 10 s; stop kills it). In CI a missing `pgbouncer` binary is a
 * failure (`.ci/run` installs Debian's pgbouncer); elsewhere the suite is skipped loudly.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { openDibs, type Dibs } from '../../src/index.js';
import { TEST_PG, tempPgStore } from './postgres.js';

export interface PgBouncer {
  readonly port: number;
  /** `TEST_PG` with host and port replaced by the bouncer's. */
  url(params?: Record<string, string>): string;
  /** SHOW POOLS / SHOW STATS rows from the admin console. */
  admin<R extends pg.QueryResultRow>(command: string): Promise<R[]>;
  stop(): Promise<void>;
}

const BINARY =
  ['/usr/sbin/pgbouncer', '/usr/bin/pgbouncer'].find((p) => spawnSync('test', ['-x', p]).status === 0) ?? null;

/** false when pgbouncer is available; otherwise why not (CI: throws). */
export function requirePgBouncer(): string | false {
  if (BINARY) return false;
  const why = 'pgbouncer is not installed (Debian: apt-get install -y pgbouncer)';
  if (process.env.CI === 'true') throw new Error(why);
  process.stderr.write(`\n*** SKIPPING PgBouncer tests: ${why}\n\n`);
  return why;
}

async function freePort(): Promise<number> {
  const server = net.createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as net.AddressInfo;
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

export async function startPgBouncer(options: { poolSize?: number; maxClients?: number } = {}): Promise<PgBouncer> {
  if (!BINARY) throw new Error('pgbouncer is not installed');
  const target = new URL(TEST_PG);
  const dbname = target.pathname.slice(1) || 'postgres';
  const user = decodeURIComponent(target.username || 'root');
  const dir = mkdtempSync(join(tmpdir(), 'dibs-pgbouncer-'));
  chmodSync(dir, 0o777); // pgbouncer refuses to run as root: it runs as `nobody` (-u) and writes here
  const port = await freePort();
  writeFileSync(join(dir, 'users.txt'), `"${user}" ""\n`);
  writeFileSync(
    join(dir, 'pgbouncer.ini'),
    [
      '[databases]',
      `${dbname} = host=${target.hostname} port=${target.port || 5432} dbname=${dbname}`,
      '[pgbouncer]',
      'listen_addr = 127.0.0.1',
      `listen_port = ${port}`,
      'unix_socket_dir =',
      'auth_type = trust',
      `auth_file = ${join(dir, 'users.txt')}`,
      `admin_users = ${user}`,
      'pool_mode = transaction',
      `default_pool_size = ${options.poolSize ?? 20}`,
      `max_client_conn = ${options.maxClients ?? 1000}`,
      'server_reset_query =',
      `logfile = ${join(dir, 'pgbouncer.log')}`,
      'log_connections = 0',
      'log_disconnections = 0',
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(BINARY, ['-u', 'nobody', join(dir, 'pgbouncer.ini')], {
    stdio: ['ignore', 'ignore', 'pipe'],
  });
  // If this test process dies without stopping it (killed, crashed), a watchdog ends the bouncer
  // within a second and removes its directory: nothing outlives the test.
  spawn(
    'sh',
    [
      '-c',
      `while kill -0 ${process.pid} 2>/dev/null && kill -0 ${child.pid} 2>/dev/null; do sleep 1; done; kill ${child.pid} 2>/dev/null; sleep 1; rm -rf '${dir}'`,
    ],
    { stdio: 'ignore', detached: true },
  ).unref();
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const url = (params: Record<string, string> = {}) => {
    const u = new URL(TEST_PG);
    u.hostname = '127.0.0.1';
    u.port = String(port);
    for (const [k, v] of Object.entries(params)) u.searchParams.set(k, v);
    return u.href;
  };
  const stop = async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM');
      const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
      await exited;
      clearTimeout(killer);
    }
    rmSync(dir, { recursive: true, force: true });
  };
  // Ready when a query goes through.
  const deadline = Date.now() + 10_000;
  for (;;) {
    const client = new pg.Client({ connectionString: url(), connectionTimeoutMillis: 1_000 });
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      break;
    } catch (error) {
      await client.end().catch(() => {});
      if (child.exitCode !== null || Date.now() > deadline) {
        await stop();
        throw new Error(`pgbouncer did not start: ${(error as Error).message}; ${stderr}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }
  return {
    port,
    url,
    admin: async <R extends pg.QueryResultRow>(command: string) => {
      const u = new URL(url());
      u.pathname = '/pgbouncer';
      const client = new pg.Client({ connectionString: u.href });
      await client.connect();
      try {
        return (await client.query<R>(command)).rows;
      } finally {
        await client.end();
      }
    },
    stop,
  };
}

/** A fresh schema opened through the bouncer (`pooler=transaction` plus `params`), dropped on cleanup. */
export async function openTempPgThrough(
  bouncer: PgBouncer,
  params: Record<string, string> = {},
): Promise<{ dibs: Dibs; store: string; schema: string; cleanup(): Promise<void> }> {
  const temp = tempPgStore();
  const store = bouncer.url({ schema: temp.schema, pooler: 'transaction', ...params });
  const dibs = await openDibs(store);
  return {
    dibs,
    store,
    schema: temp.schema,
    cleanup: async () => {
      await dibs.close();
      await temp.drop();
    },
  };
}
