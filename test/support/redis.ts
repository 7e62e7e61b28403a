/**
 * Redis for tests: the shared server on 127.0.0.1:6379 (isolated by key prefix), and
 * test-owned redis-server processes (single nodes with chosen persistence, a 3-master Cluster)
 * on free loopback ports, always stopped afterwards.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe } from 'node:test';
import { Redis } from 'ioredis';
import { openDibs, type Dibs } from '../../src/index.js';
import { uniqueId } from './assert.js';
import { openForSuite } from './suite-store.js';
import { runToEnd } from './run-to-end.js';

export const SHARED_REDIS = process.env.DIBS_TEST_REDIS ?? 'redis://127.0.0.1:6379/0';

/** Whether the shared Redis answers; under CI a missing server is a failure, not a skip. */
export async function sharedRedisAvailable(): Promise<boolean> {
  const client = new Redis(SHARED_REDIS, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    retryStrategy: () => null,
    connectTimeout: 2000,
  });
  client.on('error', () => {});
  try {
    await client.connect();
    await client.ping();
    return true;
  } catch {
    if (process.env.CI)
      throw new Error(
        `Redis is not reachable at ${SHARED_REDIS} (CI=true): start it, e.g. redis-server --port 6379 --save '' --appendonly no`,
      );
    console.warn(
      `\n  ⚠ SKIPPING Redis tests: nothing answers at ${SHARED_REDIS}. Start redis-server on 127.0.0.1:6379 to run them.\n`,
    );
    return false;
  } finally {
    client.disconnect();
  }
}

/** Deletes every key under a prefix (test cleanup). */
export async function deletePrefix(url: string, prefix: string): Promise<void> {
  const client = new Redis(url);
  try {
    for (const pattern of [`{${prefix}:*`, `{${prefix}}*`]) {
      let cursor = '0';
      do {
        const [next, keys] = await client.scan(cursor, 'MATCH', pattern, 'COUNT', 1000);
        cursor = next;
        if (keys.length) await client.del(...keys);
      } while (cursor !== '0');
    }
  } finally {
    client.disconnect();
  }
}

export function testPrefix(): string {
  return uniqueId('t');
}

/**
 * For a describe block: a fresh key prefix on a Redis (the shared server by default, or a URL
 * known only once a `before` hook has started it, e.g. a test-owned Cluster), opened before its
 * tests and removed after them (the Redis twin of sqliteForSuite/pgForSuite). `env.store` is the
 * store URL for worker processes.
 */
export function redisForSuite(url: () => string = () => SHARED_REDIS): { readonly dibs: Dibs; readonly store: string } {
  const prefix = testPrefix();
  return openForSuite(
    () => `${url()}?prefix=${prefix}`,
    () => (url() === SHARED_REDIS ? deletePrefix(SHARED_REDIS, prefix) : undefined),
  );
}

/** What a conformance suite's factory returns: a fresh store and how to throw it away. */
export type RedisSuiteStore = () => Promise<{ dibs: Dibs; cleanup: () => Promise<void>; store: string }>;

/**
 * Binds a conformance suite, unchanged, to the shared single node (each store under its own key
 * prefix, deleted afterwards) and to a 3-master Cluster this file starts and stops. `inCluster`
 * adds tests of its own inside the Cluster's describe (the Cluster's URL is known once it runs).
 */
export async function onRedisStores(
  bind: (label: string, open: RedisSuiteStore) => void,
  inCluster?: (url: () => string) => void,
): Promise<void> {
  const single = await sharedRedisAvailable();
  describe('redis single node', { skip: !single }, () => {
    bind('redis', async () => {
      const prefix = testPrefix();
      const store = `${SHARED_REDIS}?prefix=${prefix}`;
      const dibs = await openDibs(store);
      return {
        dibs,
        store,
        cleanup: async () => {
          await dibs.close();
          await deletePrefix(SHARED_REDIS, prefix);
        },
      };
    });
  });
  describe('redis cluster (3 masters, started by the test)', { skip: !redisServerInstalled() }, () => {
    const { url } = clusterForSuite();
    bind('redis cluster', async () => {
      const store = `${url()}?prefix=${testPrefix()}`;
      const dibs = await openDibs(store);
      return { dibs, store, cleanup: () => dibs.close() };
    });
    inCluster?.(url);
  });
}

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export function redisServerInstalled(): boolean {
  const found = spawnSync('redis-server', ['--version']).status === 0;
  if (!found && process.env.CI)
    throw new Error('redis-server is not installed (CI=true): .ci/run installs it (apt-get install redis-server)');
  if (!found)
    console.warn(
      '\n  ⚠ SKIPPING: redis-server is not installed; install it (apt-get install redis-server) to run these tests.\n',
    );
  return found;
}

export interface OwnedRedis {
  port: number;
  url: string;
  dir: string;
  process: ChildProcess;
  /** SIGKILL, as a crash would. */
  kill(): Promise<void>;
  /** Starts again on the same port and directory (AOF is replayed if enabled). */
  restart(): Promise<void>;
  stop(): Promise<void>;
}

/** A port below 55535 whose cluster bus port (port + 10000) was free too, for a cluster node. */
async function freeClusterPort(): Promise<number> {
  for (;;) {
    const port = await freePort();
    if (port + 10_000 > 65_535) continue;
    const busFree = await new Promise<boolean>((resolve) => {
      const server = createServer();
      server.once('error', () => resolve(false));
      server.listen(port + 10_000, '127.0.0.1', () => server.close(() => resolve(true)));
    });
    if (busFree) return port;
  }
}

/** The server exited before it answered; `portTaken` when its log says the port (or bus port) was in use. */
class ExitedBeforeReady extends Error {
  constructor(
    message: string,
    readonly portTaken: boolean,
  ) {
    super(message);
  }
}

function logTail(dir: string): string {
  const file = join(dir, 'redis.log');
  return existsSync(file) ? readFileSync(file, 'utf8').trim().split('\n').slice(-8).join('\n') : '(no log)';
}

/**
 * Until the server on `port` answers PING. If `child` exits first, fails at once with the end of its
 * log (in `dir`); the bound (60 s) only catches a server that hangs, not a speed check.
 */
async function waitForPing(port: number, child: ChildProcess, dir: string, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const log = logTail(dir);
      throw new ExitedBeforeReady(
        `redis-server on port ${port} exited (${child.exitCode ?? child.signalCode}) before it answered:\n${log}`,
        /address already in use|could not create server tcp listening socket|bind/i.test(log),
      );
    }
    const client = new Redis({
      port,
      host: '127.0.0.1',
      lazyConnect: true,
      maxRetriesPerRequest: 0,
      retryStrategy: () => null,
    });
    client.on('error', () => {}); // refused while the server starts: expected
    try {
      await client.connect();
      if ((await client.ping()) === 'PONG') return;
    } catch {
      if (Date.now() > deadline)
        throw new Error(`redis-server on port ${port} did not answer within ${timeoutMs} ms:\n${logTail(dir)}`);
    } finally {
      client.disconnect();
    }
    await sleep(50);
  }
}

/**
 * A redis-server owned by the test, on a free loopback port, with the given extra arguments
 * (and extra environment variables, e.g. a preloaded clock shift). A port found free can be taken
 * before the server binds it (by another test's server, or as the local port of any outgoing
 * connection; a cluster node also needs port + 10000): then it starts again on another port, up to
 * 3 times.
 */
export async function startRedis(
  extra: string[] = [],
  dir = mkdtempSync(join(tmpdir(), 'dibs-redis-')),
  env: Record<string, string> = {},
): Promise<OwnedRedis> {
  const clustered = extra.includes('--cluster-enabled');
  for (let attempt = 1; ; attempt++) {
    try {
      return await startRedisOn(clustered ? await freeClusterPort() : await freePort(), extra, dir, env);
    } catch (error) {
      if (!(error instanceof ExitedBeforeReady && error.portTaken) || attempt >= 3) throw error;
      rmSync(join(dir, 'redis.log'), { force: true });
    }
  }
}

async function startRedisOn(
  port: number,
  extra: string[],
  dir: string,
  env: Record<string, string>,
): Promise<OwnedRedis> {
  const launch = () => {
    const child = spawn(
      'redis-server',
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        '--daemonize',
        'no',
        '--logfile',
        join(dir, 'redis.log'),
        ...extra,
      ],
      { stdio: 'ignore', env: { ...process.env, ...env } },
    );
    return child;
  };
  const owned: OwnedRedis = {
    port,
    url: `redis://127.0.0.1:${port}/0`,
    dir,
    process: launch(),
    async kill() {
      // Already gone (killed earlier, or crashed): its 'exit' was emitted and will not come again.
      if (owned.process.exitCode !== null || owned.process.signalCode !== null) return;
      const exited = new Promise((resolve) => owned.process.once('exit', resolve));
      owned.process.kill('SIGKILL');
      await exited;
    },
    async restart() {
      owned.process = launch();
      await waitForPing(port, owned.process, dir);
    },
    async stop() {
      if (owned.process.exitCode === null && owned.process.signalCode === null) await owned.kill();
      rmSync(dir, { recursive: true, force: true });
    },
  };
  await waitForPing(port, owned.process, dir);
  return owned;
}

/**
 * For a describe block: a 3-master Cluster started before its tests and stopped after them (see
 * startCluster). `url()` and `cluster()` are valid once the `before` hook ran.
 */
export function clusterForSuite(args?: string[]): { url(): string; cluster(): OwnedCluster } {
  let owned: OwnedCluster | undefined;
  before(async () => {
    owned = await startCluster(args);
  });
  after(async () => {
    await owned?.stop();
  });
  const cluster = () => {
    if (!owned) throw new Error('the cluster is started in before()');
    return owned;
  };
  return { cluster, url: () => cluster().url };
}

/** Waits until every node reports cluster_state:ok. */
async function clusterOk(nodes: OwnedRedis[]): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const states = nodes.map(
      (n) => spawnSync('redis-cli', ['-p', String(n.port), 'cluster', 'info'], { encoding: 'utf8' }).stdout,
    );
    if (states.every((s) => s.includes('cluster_state:ok'))) return;
    if (Date.now() > deadline) throw new Error(`cluster did not reach cluster_state:ok:\n${states.join('\n')}`);
    await sleep(100);
  }
}

export interface OwnedCluster {
  url: string;
  nodes: OwnedRedis[];
  /** Restarts the nodes a test killed (same port and directory: they rejoin with their slots) and waits for cluster_state:ok. */
  restartDead(): Promise<void>;
  /** The master whose slots hold `key` (asked with redis-cli, so it answers whatever state the node is in). */
  ownerOf(key: string): OwnedRedis;
  stop(): Promise<void>;
}

/** Three masters (each with `replicas` replicas, default none) on free loopback ports; `stop`
 * removes everything. `persistence` replaces the default `--appendonly no` (e.g. AOF with
 * appendfsync always for crash tests). `envFor(i)`: extra environment of node i (e.g. a preloaded
 * clock shift with its own control file). */
export async function startCluster(
  persistence: string[] = ['--appendonly', 'no'],
  options: {
    replicas?: number;
    nodeTimeoutMs?: number;
    envFor?: (node: number) => Record<string, string>;
    /** Where node i keeps its files (AOF, nodes.conf), e.g. on a small disk; default a new temporary directory. */
    dirFor?: (node: number) => string;
  } = {},
): Promise<OwnedCluster> {
  const nodes: OwnedRedis[] = [];
  const replicas = options.replicas ?? 0;
  try {
    for (let i = 0; i < 3 * (1 + replicas); i++) {
      const dir = options.dirFor?.(i) ?? mkdtempSync(join(tmpdir(), 'dibs-cluster-'));
      nodes.push(
        await startRedis(
          [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            join(dir, 'nodes.conf'),
            '--cluster-node-timeout',
            String(options.nodeTimeoutMs ?? 5000),
            ...persistence,
          ],
          dir,
          options.envFor?.(i),
        ),
      );
    }
    const create = await runToEnd(
      'redis-cli',
      [
        '--cluster',
        'create',
        ...nodes.map((n) => `127.0.0.1:${n.port}`),
        '--cluster-replicas',
        String(replicas),
        '--cluster-yes',
      ],
      { timeoutMs: 30_000 },
    );
    if (create.status !== 0) throw new Error(`redis-cli --cluster create failed: ${create.stdout}\n${create.stderr}`);
    await clusterOk(nodes);
    // Replicas: until each is in sync with its master (a write with acks would time out before).
    for (const deadline = Date.now() + 30_000; replicas > 0; await sleep(100)) {
      const roles = nodes.map(
        (n) => spawnSync('redis-cli', ['-p', String(n.port), 'info', 'replication'], { encoding: 'utf8' }).stdout,
      );
      if (
        roles.filter((r) => r.includes('role:slave')).every((r) => r.includes('master_link_status:up')) &&
        roles.filter((r) => r.includes(`connected_slaves:${replicas}`)).length === 3
      )
        break;
      if (Date.now() > deadline) throw new Error(`cluster replicas did not sync:\n${roles.join('\n')}`);
    }
  } catch (error) {
    await Promise.all(nodes.map((n) => n.stop()));
    throw error;
  }
  return {
    url: `redis+cluster://${nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`,
    restartDead: async () => {
      for (const node of nodes)
        if (node.process.exitCode !== null || node.process.signalCode !== null) await node.restart();
      await clusterOk(nodes);
    },
    ownerOf: (key) => {
      const cli = (port: number, ...args: string[]) =>
        spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8' }).stdout.trim();
      const slot = Number(cli(nodes[0]!.port, 'cluster', 'keyslot', key));
      // Each master's own line of CLUSTER NODES ends with its slot ranges ("0-5460").
      const owns = (node: OwnedRedis) =>
        (
          cli(node.port, 'cluster', 'nodes')
            .split('\n')
            .find((line) => line.includes('myself')) ?? ''
        )
          .split(' ')
          .slice(8)
          .some((range) => {
            const [from, to = from] = range.split('-').map(Number);
            return slot >= from! && slot <= to!;
          });
      const owner = nodes.find(owns);
      if (!owner) throw new Error(`no master owns slot ${slot} of ${key}`);
      return owner;
    },
    nodes,
    stop: async () => {
      await Promise.all(nodes.map((n) => n.stop()));
    },
  };
}
