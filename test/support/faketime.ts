/**
 * A test-owned PostgreSQL whose clock the test moves: the server runs under libfaketime (Debian
 * package `faketime`) with a control file it re-reads on every clock read, so `jump('+10')` /
 * `jump('-3600')` moves CLOCK_REALTIME of every backend at once (offset in seconds from the real
 * clock), while CLOCK_MONOTONIC stays real. On 127.0.0.1, a free port and a temp dir; `stop()`
 * removes everything.
 *
 * redis-server 7 (Debian, linked with jemalloc) cannot run under libfaketime 0.9.10: it hangs at
 * start with "Unexpected recursive calls to clock_gettime()" — so store clock jumps are tested on
 * PostgreSQL only (docs/reliability.md).
 */
import { spawn, spawnSync } from 'node:child_process';
import { appendFileSync, chmodSync, chownSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import pg from 'pg';
import { freePort } from './redis.js';

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

export interface FakeClockPostgres {
  url: string;
  /** Sets the server's clock to the real clock plus `offsetS` seconds (negative: behind). */
  jump(offsetS: number): void;
  query<R extends pg.QueryResultRow>(text: string): Promise<R[]>;
  stop(): Promise<void>;
}

export async function startFakeClockPostgres(): Promise<FakeClockPostgres> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-faketime-pg-'));
  const id = (flag: string) => Number(spawnSync('id', [flag, 'postgres'], { encoding: 'utf8' }).stdout.trim());
  const [uid, gid] = [id('-u'), id('-g')];
  chownSync(dir, uid, gid);
  chmodSync(dir, 0o700);
  const asPostgres = [`--reuid=${uid}`, `--regid=${gid}`, '--clear-groups'];
  const init = spawnSync('setpriv', [...asPostgres, `${PG_BIN}/initdb`, '-D', join(dir, 'data'), '-A', 'trust', '-U', 'postgres', '--no-sync'], { encoding: 'utf8', timeout: 60_000 });
  if (init.status !== 0) throw new Error(`initdb failed: ${init.stderr}`);
  appendFileSync(join(dir, 'data', 'postgresql.conf'), "\nfsync = off\nsynchronous_commit = off\nmax_connections = 60\nshared_buffers = 16MB\nlog_min_messages = fatal\n");
  const control = join(dir, 'faketime');
  writeFileSync(control, '+0\n');
  chmodSync(control, 0o644);
  const port = await freePort();
  // libfaketime is loaded after the switch to user postgres (its semaphore must belong to it).
  const child = spawn('setpriv', [...asPostgres, 'env', `LD_PRELOAD=${LIB}`, `FAKETIME_TIMESTAMP_FILE=${control}`, 'FAKETIME_NO_CACHE=1', 'FAKETIME_DONT_FAKE_MONOTONIC=1',
    `${PG_BIN}/postgres`, '-D', join(dir, 'data'), '-p', String(port), '-c', 'listen_addresses=127.0.0.1', '-c', `unix_socket_directories=${dir}`], { stdio: 'ignore' });
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
  const exited = () => new Promise<void>((resolve) => (child.exitCode !== null || child.signalCode !== null ? resolve() : child.once('exit', () => resolve())));
  const stop = async () => {
    child.kill('SIGQUIT');
    await Promise.race([exited(), sleep(5000)]);
    child.kill('SIGKILL');
    await exited();
    rmSync(dir, { recursive: true, force: true });
  };
  for (const deadline = Date.now() + 30_000; ; await sleep(100)) {
    if (await query('SELECT 1').then(() => true, () => false)) break;
    if (Date.now() > deadline) {
      await stop();
      throw new Error('PostgreSQL under libfaketime did not start');
    }
  }
  return { url, jump: (offsetS) => writeFileSync(control, `${offsetS >= 0 ? '+' : ''}${offsetS}\n`), query, stop };
}
