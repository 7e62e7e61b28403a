/**
 * Replicated Redis topologies owned by a test, on free loopback ports: a master whose replicas
 * replicate through delaying relays (a cross-zone link, see fault-proxy.ts' delayMs) watched by
 * three sentinels, and a Cluster of 3 masters + 3 replicas. Every process is killed afterwards,
 * also when the test fails or the test process exits (process 'exit' handler).
 *
 * Why the relays: on loopback replication is nearly instant and a SIGKILLed process's kernel
 * still delivers what it had sent, so a failover loses nothing and proves nothing. `failover()`
 * kills the master *and* cuts its replication links at the same instant.
 *
 * A sentinel re-points a replica whose master is not the address it monitors straight to the
 * master ("+fix-slave-config"), failover-timeout (10 s here) after it first saw it: a round that
 * reaches its crash later than that (any round on a loaded machine) finds its replicas
 * replicating around their relays, and black-holing the relays would cut nothing. So
 * crashMaster's lag is made by the master itself: it refuses its replicas replication (ACL) and
 * drops their connections.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { startFaultProxy, type FaultProxy } from './fault-proxy.js';
import { freePort, startRedis, type OwnedRedis } from './redis.js';

const owned = new Set<ChildProcess>();
process.once('exit', () => {
  for (const child of owned) child.kill('SIGKILL');
});
const track = (node: OwnedRedis) => {
  owned.add(node.process);
  return node;
};

const cli = (port: number, ...args: string[]) =>
  spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 10_000 }).stdout?.trim() ?? '';

async function until(what: string, check: () => boolean | Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(100);
  }
}

/** Something a sentinel announced about the master (its own view: each sentinel announces its own). */
export interface SentinelEvent {
  /** Milliseconds since the setup was ready. */
  atMs: number;
  sentinel: number;
  channel: '+sdown' | '+odown' | '+switch-master' | '+tilt';
  message: string;
}

export interface SentinelSetup {
  /** `redis+sentinel://…/mymaster/0` (add `?prefix=…&acks=…`). */
  url: string;
  master: OwnedRedis;
  replicas: OwnedRedis[];
  /** One delaying relay per replica, between it and the master. */
  links: FaultProxy[];
  sentinels: { port: number; process: ChildProcess }[];
  /**
   * SIGKILL the master and cut every replication link in the same tick. With `lag`, the replicas
   * first stop hearing from the master (it refuses them replication) while the master goes on
   * answering, and the kill waits until `lag` is done: whatever the master acknowledges meanwhile
   * (e.g. the test's own probe write, made in `lag`) is certainly lost, however fast or slow the
   * machine is (without it a loss needs a write to be in the 20 ms link at the kill, which a
   * loaded machine may miss).
   */
  crashMaster(options?: { lag?: () => Promise<unknown> }): Promise<void>;
  /**
   * With `partitionable`: cut the master off from the sentinels (and from every client that found
   * it through them) and from its replicas, but leave it running and reachable on its own port —
   * clients that connect there directly still reach it.
   */
  partitionMaster(): void;
  /** Waits until the sentinels name a new master and it accepts writes; returns its port. */
  promoted(): Promise<number>;
  /** What the sentinels announced since the setup was ready, oldest first. */
  events: SentinelEvent[];
  /**
   * The failovers since the setup was ready, whoever caused them, as the sentinels announced them
   * (each master switch once, however many sentinels announce it). No round trip: fit to be asked
   * on a storm's timed path. Empty: no switch announced.
   */
  failovers(): string[];
  /**
   * failovers(), and a master a sentinel names now without an announcement heard yet (a client that
   * followed the switch may be faster than the announcement): asks every sentinel.
   */
  askFailovers(): Promise<string[]>;
  stop(): Promise<void>;
}

/** 1 master + `replicas` replicas (through relays delaying `delayMs` each way) + 3 sentinels. */
export async function startSentinelSetup(
  options: { replicas?: number; delayMs?: number; masterArgs?: string[]; partitionable?: boolean } = {},
): Promise<SentinelSetup> {
  const dirs: string[] = [];
  const nodes: OwnedRedis[] = [];
  const links: FaultProxy[] = [];
  const sentinels: { port: number; process: ChildProcess }[] = [];
  const watchers: Redis[] = [];
  const stop = async () => {
    for (const w of watchers) w.disconnect();
    for (const s of sentinels) s.process.kill('SIGKILL');
    await Promise.all(links.map((l) => l.close()));
    await Promise.all(nodes.map((n) => n.stop()));
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  };
  try {
    // Replicas must not be chosen by a lower priority or accept writes; sentinel promotes the one with the most data.
    // No diskless-sync delay (Redis' default waits 5 s for more replicas before a full sync, and a
    // replica that connects after the transfer began waits for the next one): at load the replicas'
    // first sync alone went past the 30 s bound of 'replicas in sync'.
    const master = track(await startRedis(['--repl-diskless-sync-delay', '0', ...(options.masterArgs ?? [])]));
    nodes.push(master);
    const replicas: OwnedRedis[] = [];
    for (let i = 0; i < (options.replicas ?? 2); i++) {
      const link = await startFaultProxy({ host: '127.0.0.1', port: master.port }, { delayMs: options.delayMs ?? 20 });
      links.push(link);
      const replica = track(
        await startRedis(['--replicaof', '127.0.0.1', String(link.port), ...(options.masterArgs ?? [])]),
      );
      nodes.push(replica);
      replicas.push(replica);
    }
    await until('replicas in sync', () =>
      replicas.every((r) => cli(r.port, 'info', 'replication').includes('master_link_status:up')),
    );
    // Partitionable: the sentinels (and so the clients they direct) know the master only through a relay.
    const sentinelLink = options.partitionable
      ? await startFaultProxy({ host: '127.0.0.1', port: master.port })
      : undefined;
    if (sentinelLink) links.push(sentinelLink);
    const watchedPort = sentinelLink?.port ?? master.port;
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      const dir = mkdtempSync(join(tmpdir(), 'dibs-sentinel-'));
      dirs.push(dir);
      const conf = join(dir, 'sentinel.conf');
      writeFileSync(
        conf,
        [
          `port ${port}`,
          'bind 127.0.0.1',
          `dir ${dir}`,
          `sentinel monitor mymaster 127.0.0.1 ${watchedPort} 2`,
          // Partitionable, the sentinels reach the master through a relay on this test's event loop,
          // which a busy storm coordinator can stall past a second: they would fail over by themselves.
          `sentinel down-after-milliseconds mymaster ${sentinelLink ? 3000 : 1000}`,
          'sentinel failover-timeout mymaster 10000',
          'sentinel parallel-syncs mymaster 2',
          '',
        ].join('\n'),
      );
      const child = spawn('redis-server', [conf, '--sentinel', '--logfile', join(dir, 'sentinel.log')], {
        stdio: 'ignore',
      });
      owned.add(child);
      sentinels.push({ port, process: child });
    }
    await until('sentinels that know the replicas', () =>
      sentinels.every(
        (s) =>
          (cli(s.port, 'sentinel', 'replicas', 'mymaster').match(/^name$/gm) ?? []).length === replicas.length &&
          cli(s.port, 'sentinel', 'sentinels', 'mymaster')
            .split('\n')
            .filter((l) => l === 'name').length === 2,
      ),
    );
    // the master stops feeding its replicas, whichever way they reach it (see the file's comment):
    // it refuses them replication and drops their connections, and goes on answering its clients
    const starveReplicas = async () => {
      const refused = cli(master.port, 'acl', 'setuser', 'default', '-psync', '-sync', '-replconf');
      if (refused !== 'OK') throw new Error(`the master did not refuse replication: ${refused}`);
      cli(master.port, 'client', 'kill', 'type', 'replica');
      await until('the replicas cut off', () =>
        cli(master.port, 'info', 'replication').includes('connected_slaves:0\r'),
      );
    };
    const masterPort = () =>
      Number(cli(sentinels[0]!.port, 'sentinel', 'get-master-addr-by-name', 'mymaster').split('\n')[1]);
    // the sentinels' own announcements, so that a round can tell a failover it did not cause
    const events: SentinelEvent[] = [];
    const ready = Date.now();
    // '+switch-master': "<name> <old ip> <old port> <new ip> <new port>", from each sentinel
    const failovers = () => [
      ...new Set(
        events
          .filter((e) => e.channel === '+switch-master')
          .map((e) => {
            const [, , from, , to] = e.message.split(' ');
            return `:${from} -> :${to}`;
          }),
      ),
    ];
    for (const [i, s] of sentinels.entries()) {
      const watcher = new Redis({ port: s.port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
      watcher.on('error', () => {});
      watchers.push(watcher);
      watcher.on('message', (channel: SentinelEvent['channel'], message: string) => {
        // a replica's +sdown is not the master's
        if (channel === '+switch-master' || channel === '+tilt' || message.startsWith('master '))
          events.push({ atMs: Date.now() - ready, sentinel: i, channel, message });
      });
      await watcher.subscribe('+sdown', '+odown', '+switch-master', '+tilt');
    }
    return {
      url: `redis+sentinel://${sentinels.map((s) => `127.0.0.1:${s.port}`).join(',')}/mymaster/0`,
      master,
      replicas,
      links,
      sentinels,
      partitionMaster() {
        if (!sentinelLink) throw new Error('startSentinelSetup({ partitionable: true }) is needed');
        sentinelLink.blackhole(true, { closes: true });
        for (const link of links) {
          if (link === sentinelLink) continue;
          link.refuse(true);
          link.reset();
        }
      },
      async crashMaster({ lag } = {}) {
        if (lag) {
          await starveReplicas();
          await lag();
        }
        for (const link of links) {
          link.refuse(true);
          link.reset();
        }
        await master.kill();
      },
      async promoted() {
        await until(
          'a promoted master',
          () => {
            const port = masterPort();
            return (
              port !== watchedPort && replicas.some((r) => r.port === port) && cli(port, 'role').startsWith('master')
            );
          },
          60_000,
        );
        return masterPort();
      },
      events,
      failovers,
      async askFailovers() {
        const known = failovers();
        const named = await Promise.all(
          sentinels.map((s) =>
            withNode(s.port, async (raw) =>
              Number(((await raw.call('sentinel', 'get-master-addr-by-name', 'mymaster')) as string[] | null)?.[1]),
            ).catch(() => Number.NaN),
          ),
        );
        // (NaN: a sentinel that did not answer names nobody)
        for (const port of new Set(named))
          if (Number.isFinite(port) && port !== watchedPort && !known.some((f) => f.endsWith(`-> :${port}`)))
            known.push(`:${watchedPort} -> :${port} (named by a sentinel, not announced yet)`);
        return known;
      },
      stop,
    };
  } catch (error) {
    await stop();
    throw error;
  }
}

/** Keys of a raw node (no dibs), for checks that must not trust the store's own view. */
export async function withNode<T>(port: number, fn: (client: Redis) => Promise<T>): Promise<T> {
  const client = new Redis({ port, host: '127.0.0.1', maxRetriesPerRequest: 1 });
  client.on('error', () => {});
  try {
    return await fn(client);
  } finally {
    client.disconnect();
  }
}

/** What the sentinels announced about the master, for a test's message. */
export const describeEvents = (setup: SentinelSetup) =>
  setup.events.length === 0
    ? 'the sentinels announced nothing about the master'
    : `sentinel announcements: ${setup.events.map((e) => `${e.atMs} ms s${e.sentinel} ${e.channel} ${e.message}`).join(', ')}`;
