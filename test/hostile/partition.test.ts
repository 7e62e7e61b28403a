/**
 * Partitions between real "hosts" (network namespaces joined by veth pairs, test/support/netns.ts):
 * a store host running a test-owned PostgreSQL and redis-server, and two worker hosts whose
 * processes reach it over real TCP. Faults are nftables rules on the store host, on a schedule:
 * drop what one worker host sends (the store never hears from it again, not even a FIN), drop what
 * the store sends it (its requests are applied, their answers never arrive), drop both, reject with
 * a reset — each healed after a few seconds.
 *
 * - A client that vanishes mid-transaction behind a one-sided partition: its row lock is freed by
 *   the server within dibs' idle_in_transaction_session_timeout — and, as a control that the
 *   measurement can fail, not within twice that with the limit off.
 * - Lock storms from both worker hosts through the faults, on PostgreSQL, Redis and a 3-master
 *   Redis Cluster (test/support/netns-cluster.ts), every section
 *   writing through a fenced PostgreSQL table on the store host; the history checker
 *   (test/support/history-checker.ts) must find no two holders, no fence out of order and no
 *   acknowledged write missing. Verdicts are printed.
 * Claims through the same cuts: partition-claims.test.ts.
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
import { netnsUnavailable, type Direction, type Host, type Link, type Network } from '../support/netns.js';
import type { HostPostgres, HostRedis } from '../support/netns-stores.js';
import { hostileNetworkForSuite } from '../support/netns-suite.js';
import { startClusterOn, type HostCluster } from '../support/netns-cluster.js';
import { workerArgs } from '../support/node-worker.js';

const skip = netnsUnavailable();
const VANISH = new URL('../support/pg-vanish.ts', import.meta.url).pathname;
const ROOT = new URL('../..', import.meta.url).pathname;
const now = () => Number(process.hrtime.bigint()) / 1e6;

describe('partitions between hosts', { skip: skip ?? false, timeout: 600_000 }, () => {
  const env = hostileNetworkForSuite();
  let net: Network;
  let hosts: Host[];
  let links: Link[];
  let pgHost: HostPostgres;
  let redisHost: HostRedis;
  let cluster: HostCluster | undefined;
  before(async () => {
    ({ net, hosts, links, pg: pgHost, redis: redisHost } = env());
    cluster = await startClusterOn(env().store, links);
  });
  after(async () => {
    await cluster?.stop();
  });

  /** Locks a row from host w1 with dibs' session options, cuts w1 → store, kills the client; ms until the row is free again (null: not within `limitMs`). */
  async function vanish(params: string, idleOverride: string, limitMs: number): Promise<number | null> {
    const link = links[0]!;
    const url = `${pgHost.urlAt(link.addressA)}?${params}`;
    const child: ChildProcess = hosts[0]!.spawn(
      process.execPath,
      [...workerArgs(VANISH), url, idleOverride, 'invoice'],
      { stdio: ['ignore', 'pipe', 'pipe'], cwd: ROOT },
    );
    let err = '';
    child.stderr!.on('data', (d) => (err += d));
    // timed from when the client had the lock (its own clock, this machine's): the server's idle
    // timer started then, and a loaded test process reads the line and cuts the link later
    const lockedAt = await new Promise<number>((resolve, reject) => {
      child.stdout!.on('data', (d) => {
        const at = /locked (\d+)/.exec(String(d));
        if (at) resolve(Number(at[1]));
      });
      child.once('exit', (code) => reject(new Error(`pg-vanish exited ${code}: ${err}`)));
    });
    net.cut(link, 'to-store');
    child.kill('SIGKILL');
    const t0 = now() - (Date.now() - lockedAt);
    const local = await openDibs(`${pgHost.localUrl}&${params}`);
    try {
      while (now() - t0 < limitMs) {
        try {
          const lease = await local.locks.tryAcquire('invoice', { ttlMs: 1000 });
          if (lease) {
            const elapsed = now() - t0;
            await local.locks.release(lease);
            return elapsed;
          }
        } catch (error) {
          if ((error as { code?: string }).code !== 'unavailable') throw error; // lock_timeout while the row is held
        }
        await sleep(50);
      }
      return null;
    } finally {
      await local.close();
      net.heal(link);
    }
  }

  it('postgres: a client gone mid-transaction behind a one-sided partition loses its row lock within idle_in_transaction_session_timeout', async () => {
    const IDLE = 2000;
    const params = `schema=vanish&queryTimeoutMs=4000&statementTimeoutMs=1500&idleInTransactionTimeoutMs=${IDLE}`;
    const setup = await openDibs(`${pgHost.localUrl}&${params}`);
    await setup.locks.release(await setup.locks.acquire('invoice', { ttlMs: 1000 }));
    await setup.close();

    const freed = await vanish(params, '', 15_000);
    console.log(
      `[partition] postgres, client vanished holding a row lock (idle_in_transaction_session_timeout ${IDLE} ms): freed after ${freed?.toFixed(0)} ms`,
    );
    assert.ok(
      freed !== null && freed >= IDLE * 0.75 && freed <= IDLE + 3000,
      `row lock freed after ${freed} ms, expected about ${IDLE}`,
    );

    const control = await vanish(params, '0', 2 * IDLE + 3000);
    console.log(
      `[partition] postgres, control without the limit: ${control === null ? `still locked after ${2 * IDLE + 3000} ms` : `freed after ${control.toFixed(0)} ms`}`,
    );
    assert.equal(
      control,
      null,
      'without idle_in_transaction_session_timeout the vanished transaction keeps its lock (the measurement can fail)',
    );
    await pgHost.admin("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE state = 'idle in transaction'");
  });

  /** The fault schedule: each entry cuts one link one way, then heals it. */
  const SCHEDULE: Array<[number, Direction, number]> = [
    [0, 'to-store', 3000],
    [0, 'from-store', 3000],
    [1, 'both', 3000],
    [0, 'reject', 2000],
    [1, 'from-store', 2500],
  ];
  async function faults(stop: () => boolean, writes: () => Promise<unknown[]>): Promise<string[]> {
    const log: string[] = [];
    // from the storm's first write on, not from a timer: on a loaded machine the workers may take
    // longer to start than a fixed lead, and faults over before they write interrupt nothing
    while (!stop() && (await writes()).length === 0) await sleep(100);
    for (let round = 0; round < (LONG ? 4 : 1) && !stop(); round++) {
      for (const [i, direction, ms] of SCHEDULE) {
        if (stop()) break;
        net.cut(links[i]!, direction);
        log.push(`w${i + 1} ${direction} ${ms} ms`);
        await sleep(ms);
        net.heal(links[i]!);
        await sleep(1500);
      }
    }
    return log;
  }

  const TARGETS: Array<{ label: string; lockStore: (link: Link, tag: string) => string }> = [
    {
      label: 'postgres',
      lockStore: (link, tag) =>
        `${pgHost.urlAt(link.addressA)}?schema=${tag}&poolSize=4&queryTimeoutMs=2000&connectTimeoutMs=2000`,
    },
    {
      label: 'redis',
      lockStore: (link, tag) => `${redisHost.urlAt(link.addressA)}?prefix=${tag}&commandTimeoutMs=1000`,
    },
    // through the worker host's forwarder, over its own link (test/support/netns-cluster.ts)
    { label: 'redis cluster', lockStore: (_link, tag) => `${cluster!.url}?prefix=${tag}&commandTimeoutMs=1000` },
  ];
  for (const target of TARGETS) {
    it(`${target.label}: lock storm from two hosts through one-sided partitions — history valid on the fenced resource`, async () => {
      const tag = uniqueId('h').toLowerCase();
      const resource = new GuardedResource({ url: pgHost.localUrl, schema: tag });
      await resource.create();
      const setup = target.label === 'postgres' ? await openDibs(`${pgHost.localUrl}&schema=${tag}`) : undefined; // migrate once, not racing from 4 processes
      await setup?.close();
      const durationMs = LONG ? 75_000 : 18_000;
      const runs: WorkerRun[] = hosts.flatMap((host, i) => {
        const config: HistoryWorkerConfig = {
          store: target.lockStore(links[i]!, tag),
          resource: { url: pgHost.urlAt(links[i]!.addressA), schema: tag },
          keys: ['invoice', 'ledger'],
          rounds: 0,
          writes: 3,
          holdMs: 20,
          ttlMs: 2500,
          durationMs,
        };
        return [
          { config, prefix: host.prefix },
          { config, prefix: host.prefix },
        ];
      });
      let done = false;
      const injected = faults(
        () => done,
        () => resource.log(),
      );
      const result = await runHistory(runs, () => resource.log(), durationMs + 120_000).finally(() => (done = true));
      const faultLog = await injected;
      await resource.drop().finally(() => resource.close());
      console.log(
        `[partition] ${target.label}: faults ${faultLog.join(', ')}; rounds retried after unavailable/timeout: ${result.unavailable}`,
      );
      console.log(formatVerdict(`${target.label} lock storm through partitions`, result.verdict));
      assert.deepEqual(result.verdict.violations, []);
      assert.ok(result.verdict.writes.accepted >= 40, 'the storm made progress');
      assert.ok(
        result.unavailable + result.verdict.writes.unknown + result.verdict.lost > 0,
        'the faults interrupted something',
      );
    });
  }
});
