/**
 * A slow, unreliable link between worker hosts and the store host (network namespaces,
 * test/support/netns.ts): this kernel has no `netem`, so a userspace relay on the store host
 * (test/support/netns-relay.ts) delays every chunk 20 ms + up to 30 ms of jitter each way and
 * freezes a direction for 300 ms on 2 % of chunks (a lost segment's retransmission), connections
 * independently (answers on different connections arrive reordered). Lock storms from both worker
 * hosts with short TTLs run through it, every section writing through the fenced PostgreSQL table
 * (also behind the relay); the history checker must find nothing. Verdicts are printed. Then a
 * claim storm and a flash sale through the same relays (test/support/link-rounds.ts), judged by the
 * client-side ledgers.
 */
import assert from 'node:assert/strict';
import type { ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { uniqueId } from '../support/assert.js';
import { LONG } from '../support/faults.js';
import { GuardedResource } from '../support/guarded-resource.js';
import { formatVerdict } from '../support/history-checker.js';
import { runHistory, type WorkerRun } from '../support/history-run.js';
import type { HistoryWorkerConfig } from '../support/history-worker.js';
import { buyRound, claimRound, type LinkRound, lockRound } from '../support/link-rounds.js';
import { startClusterOn, type HostCluster } from '../support/netns-cluster.js';
import { netnsUnavailable } from '../support/netns.js';
import { hostileNetworkForSuite, type HostileNetwork } from '../support/netns-suite.js';
import { freePort } from '../support/redis.js';
import { workerArgs } from '../support/node-worker.js';

const skip = netnsUnavailable();
const RELAY = new URL('../support/netns-relay.ts', import.meta.url).pathname;
const ROOT = new URL('../..', import.meta.url).pathname;
const LINK = { delayMs: 20, jitterMs: 30, stallP: 0.02, stallMs: 300 };

describe('lock storms over a slow, lossy link between hosts', { skip: skip ?? false, timeout: 600_000 }, () => {
  const relays: Array<{ child: ChildProcess; stats: string }> = [];
  // Registered before the network's own hooks so that it runs first: the relays report their
  // counts on SIGTERM before the namespace teardown kills whatever is left.
  after(async () => {
    for (const r of relays) {
      if (r.child.exitCode === null && r.child.signalCode === null) {
        const exited = new Promise((resolve) => r.child.once('exit', resolve));
        r.child.kill('SIGTERM');
        await Promise.race([exited, sleep(5000)]);
      }
      console.log(
        `[slow-link] relay: ${r.stats
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .join('')}`,
      );
    }
  });
  const env = hostileNetworkForSuite();
  let net: HostileNetwork;
  const ports = { postgres: 5433, redis: 6380 };
  /** Starts a slow relay on the store host: `listen` (every address there) → `target` on that host. */
  const startRelay = async (listen: number, target: number) => {
    const child = net.store.spawn(
      process.execPath,
      [...workerArgs(RELAY), JSON.stringify({ listen, target, ...LINK })],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    const relay = { child, stats: '' };
    child.stdout!.on('data', (d) => (relay.stats += d));
    await new Promise<void>((resolve, reject) => {
      child.stdout!.on('data', () => relay.stats.includes('listening') && resolve());
      child.once('exit', (code) => reject(new Error(`relay exited ${code}`)));
    });
    relays.push(relay);
  };
  before(async () => {
    net = env();
    await startRelay(ports.postgres, 5432);
    await startRelay(ports.redis, 6379);
  });
  const TARGETS = [
    {
      label: 'postgres',
      lockStore: (address: string, tag: string) =>
        `postgres://postgres@${address}:${ports.postgres}/postgres?schema=${tag}&poolSize=4&queryTimeoutMs=3000&connectTimeoutMs=3000`,
    },
    {
      label: 'redis',
      lockStore: (address: string, tag: string) =>
        `redis://${address}:${ports.redis}/0?prefix=${tag}&commandTimeoutMs=2000`,
    },
  ];
  for (const target of TARGETS) {
    const round = (): LinkRound => ({
      get env() {
        return net;
      },
      kind: target.label as 'postgres' | 'redis',
      storeAt: (i, tag) =>
        target.label === 'postgres'
          ? `${target.lockStore(net.links[i]!.addressA, tag)}`
          : `redis://${net.links[i]!.addressA}:${ports.redis}/0?prefix=${tag}&commandTimeoutMs=2000`,
      resourceAt: (i) => `postgres://postgres@${net.links[i]!.addressA}:${ports.postgres}/postgres`,
      fault: () => undefined,
      heal: () => undefined,
      report: () =>
        `through the relay (${LINK.delayMs} ms + ≤ ${LINK.jitterMs} ms each way, ${LINK.stallP * 100} % of chunks stalled ${LINK.stallMs} ms)`,
      size: LONG ? { claimants: 8000, buyers: 1600, lockMs: 0 } : { claimants: 1200, buyers: 240, lockMs: 0 },
    });
    // FAULTS_LONG=1 only (the CI time budget); the lock round below runs everywhere
    const longOnly = LONG ? false : 'FAULTS_LONG=1 only';
    it(`${target.label}: claim storm from two hosts through the relay — client ledger clean`, { skip: longOnly }, () =>
      claimRound(round(), `${target.label} (slow link)`),
    );
    it(
      `${target.label}: flash sale from two hosts through the relay — every acknowledged order kept`,
      { skip: longOnly },
      () => buyRound(round(), `${target.label} (slow link)`),
    );
    it(`${target.label}: 2 hosts × 2 processes, TTL 1.5 s, through the relay — history valid`, async () => {
      const tag = uniqueId('l').toLowerCase();
      const resource = new GuardedResource({ url: net.pg.localUrl, schema: tag });
      await resource.create();
      if (target.label === 'postgres') await (await openDibs(`${net.pg.localUrl}&schema=${tag}`)).close(); // migrate once
      const durationMs = LONG ? 60_000 : 12_000;
      const runs: WorkerRun[] = net.hosts.flatMap((host, i) => {
        const address = net.links[i]!.addressA;
        const config: HistoryWorkerConfig = {
          store: target.lockStore(address, tag),
          resource: { url: `postgres://postgres@${address}:${ports.postgres}/postgres`, schema: tag },
          keys: ['invoice', 'ledger'],
          rounds: 0,
          writes: 3,
          holdMs: 20,
          ttlMs: 1500,
          durationMs,
        };
        return [
          { config, prefix: host.prefix },
          { config, prefix: host.prefix },
        ];
      });
      try {
        const result = await runHistory(runs, () => resource.log(), durationMs + 120_000);
        console.log(
          `[slow-link] ${target.label}: delay ${LINK.delayMs} ms + ≤ ${LINK.jitterMs} ms jitter each way, ${LINK.stallP * 100} % of chunks stalled ${LINK.stallMs} ms; rounds retried ${result.unavailable}`,
        );
        console.log(formatVerdict(`${target.label} lock storm over a slow, lossy link`, result.verdict));
        assert.deepEqual(result.verdict.violations, []);
        assert.ok(result.verdict.writes.accepted >= 30, 'the storm made progress');
      } finally {
        await resource.drop().finally(() => resource.close());
      }
    });
  }
  // A 3-master Redis Cluster on the store host, each worker host's forwarder reaching every node
  // through a slow relay of its own (netns-cluster.ts `upstream`). FAULTS_LONG=1 only (CI budget).
  describe('a 3-master Redis Cluster through the relays', { skip: LONG ? false : 'FAULTS_LONG=1 only' }, () => {
    let cluster: HostCluster | undefined;
    before(async () => {
      cluster = await startClusterOn(net.store, net.links, {
        upstream: async (nodePorts) => {
          const taken = new Set([...nodePorts, ...nodePorts.map((p) => p + 10_000), 5432, 5433, 6379, 6380]);
          const relayPorts: number[] = [];
          while (relayPorts.length < nodePorts.length) {
            const port = await freePort();
            if (!taken.has(port)) relayPorts.push(port), taken.add(port);
          }
          for (const [i, port] of relayPorts.entries()) await startRelay(port, nodePorts[i]!);
          return relayPorts;
        },
      });
    });
    after(async () => {
      await cluster?.stop();
      cluster = undefined;
    });
    const round = (): LinkRound => ({
      get env() {
        return net;
      },
      kind: 'redis-cluster',
      get cluster() {
        return cluster;
      },
      storeAt: (_i, tag) => `${cluster!.url}?prefix=${tag}&commandTimeoutMs=2000`,
      resourceAt: (i) => `postgres://postgres@${net.links[i]!.addressA}:${ports.postgres}/postgres`,
      fault: () => undefined,
      heal: () => undefined,
      report: () =>
        `every node through the relay (${LINK.delayMs} ms + ≤ ${LINK.jitterMs} ms each way, ${LINK.stallP * 100} % of chunks stalled ${LINK.stallMs} ms)`,
      size: { claimants: 4000, buyers: 800, lockMs: 30_000 },
    });
    it('redis cluster: claim storm from two hosts through the relays — client ledger clean', () =>
      claimRound(round(), 'redis cluster (slow link)'));
    it('redis cluster: flash sale from two hosts through the relays — every acknowledged order kept', () =>
      buyRound(round(), 'redis cluster (slow link)'));
    it('redis cluster: 2 hosts × 2 processes, TTL 1.5 s, through the relays — history valid', () =>
      lockRound(round(), 'redis cluster (slow link)'));
  });
});
