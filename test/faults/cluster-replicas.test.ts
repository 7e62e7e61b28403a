/**
 * Redis Cluster with replicas (3 masters + 3 replicas, `--cluster-replicas 1`) under
 * `acks=replicas:1`: during a 4-process claim storm and a 4-process flash sale, the master owning
 * the pool's slot is SIGKILLed and never restarted; its replica is promoted by the cluster and
 * dibs follows the new topology without a restart. The promoted master has no replica left, so its
 * slots answer `unavailable` until a replacement node joins as its replica (the test adds one). Every acknowledged claim and order is on the
 * new master, no code has two holders, sold ≤ cap, the audits are clean, and a lock's fence only
 * grows across the failover.
 *
 * Here replication runs over loopback (a Cluster replica follows its master's announced address,
 * which a relay cannot sit in front of): the loss without acks is measured by sentinel.test.ts,
 * whose links are delayed and cut.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { openDibs } from '../../src/index.js';
import { saleGroupOf, saleKey, saleTag } from '../../src/backends/redis/keys.js';
import { LONG } from '../support/faults.js';
import { redisServerInstalled, startCluster, startRedis } from '../support/redis.js';
import { assertBuysSurvived, runSaleStorm, spread, type SaleOp } from '../support/sale-storm.js';
import { assertStormInvariants, runClaimStorm } from '../support/storm.js';

const CODES = LONG ? 20_000 : 3000;
const CLAIMANTS = LONG ? 24_000 : 3600;
const BUYS = LONG ? 6000 : 1200;
const CAP = LONG ? 2000 : 400;

/** Whether a node's own line of CLUSTER NODES lists `slot` among its ranges. */
const ownsSlot = (nodes: string, slot: number) =>
  (nodes.split('\n').find((line) => line.includes('myself')) ?? '')
    .split(' ')
    .slice(8)
    .some((range) => {
      const [from, to = from] = range.split('-').map(Number);
      return slot >= from! && slot <= to!;
    });

const cli = (port: number, ...args: string[]) =>
  spawnSync('redis-cli', ['-p', String(port), ...args], { encoding: 'utf8', timeout: 10_000 }).stdout?.trim() ?? '';

describe("redis cluster with replicas: the pool's master is killed for good", {
  skip: redisServerInstalled() ? false : 'redis-server is not installed',
  timeout: 400_000,
}, () => {
  it('with acks=replicas:1: the replica is promoted, dibs follows it, nothing acknowledged is lost', async () => {
    const cluster = await startCluster(['--appendonly', 'no'], { replicas: 1, nodeTimeoutMs: 2000 });
    let opened: Awaited<ReturnType<typeof openDibs>> | undefined;
    try {
      const store = `${cluster.url}?prefix=clr&commandTimeoutMs=5000&acks=replicas:1&acksTimeoutMs=1500`;
      const dibs = await openDibs(store);
      opened = dibs;
      const health = await dibs.health();
      assert.equal((health.details.masters as unknown[]).length, 3, 'health asks every master');
      await dibs.pools.create({ name: 'clr' });
      await dibs.pools.importCodes(
        'clr',
        Array.from({ length: CODES }, (_, i) => `CLR-${i}`),
      );
      const sale = await dibs.sales.create({
        sku: 'CLR',
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap: CAP,
        perCustomerLimit: 2,
      });
      const ops: SaleOp[] = Array.from({ length: BUYS }, (_, i) => ({
        customer: `buyer-${i % (BUYS / 2)}`,
        kind: 'buy',
        quantity: 1,
        thinkMs: 0,
        delayMs: 3,
        ...(i % 3 === 0 ? {} : { key: `order-${i}` }),
      }));
      const owner = cluster.ownerOf('{clr:clr}');
      // A lock on the same master: its fence must only grow across the failover.
      let lockKey = 'l0';
      for (let i = 0; i < 100 && cluster.ownerOf(`{clr:lock:${lockKey}}`) !== owner; i++) lockKey = `l${i + 1}`;
      let fenceBefore = 0;
      let crashed = false;
      let replaced = 0;
      const crash = async () => {
        for (const deadline = Date.now() + 60_000; Date.now() < deadline; await sleep(20)) {
          const stats = await dibs.pools.stats('clr').catch(() => undefined);
          if (stats && stats.claimed >= 100) break;
        }
        const lease = await dibs.locks.acquire(lockKey, { ttlMs: 60_000 });
        fenceBefore = lease.fence;
        await owner.kill();
        crashed = true;
        // The promoted replica has no replica of its own, so under acks=replicas:1 its slots refuse
        // writes (`unavailable`) until a replacement node joins as its replica — as an operator or
        // a managed service replaces a dead node.
        const survivors = cluster.nodes.filter((n) => n !== owner);
        const slot = cli(survivors[0]!.port, 'cluster', 'keyslot', '{clr:clr}');
        let promoted: (typeof survivors)[number] | undefined;
        for (const deadline = Date.now() + 60_000; !promoted; await sleep(200)) {
          if (Date.now() > deadline) throw new Error('no replica was promoted');
          promoted = survivors.find(
            (n) => cli(n.port, 'role').startsWith('master') && ownsSlot(cli(n.port, 'cluster', 'nodes'), Number(slot)),
          );
        }
        const dir = mkdtempSync(join(tmpdir(), 'dibs-cluster-'));
        const fresh = await startRedis(
          [
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            join(dir, 'nodes.conf'),
            '--cluster-node-timeout',
            '2000',
            '--appendonly',
            'no',
          ],
          dir,
        );
        cluster.nodes.push(fresh);
        const add = spawnSync(
          'redis-cli',
          [
            '--cluster',
            'add-node',
            `127.0.0.1:${fresh.port}`,
            `127.0.0.1:${promoted.port}`,
            '--cluster-slave',
            '--cluster-master-id',
            cli(promoted.port, 'cluster', 'myid'),
          ],
          { encoding: 'utf8', timeout: 30_000 },
        );
        if (add.status !== 0) throw new Error(`add-node failed: ${add.stdout}${add.stderr}`);
        for (
          const deadline = Date.now() + 60_000;
          !/slave0:.*state=online/.test(cli(promoted.port, 'info', 'replication'));
          await sleep(200)
        ) {
          if (Date.now() > deadline) throw new Error('the replacement replica did not sync');
        }
        replaced = Date.now();
      };
      let crashing: Promise<void> = Promise.resolve();
      const [claims, orders] = await Promise.all([
        runClaimStorm({
          store,
          pool: 'clr',
          processes: 4,
          claimants: CLAIMANTS,
          concurrency: 8,
          timeoutMs: 240_000,
          onStart: () => (crashing = crash()),
        }),
        runSaleStorm({ store, sale: sale.id, lanes: spread(ops, 4), concurrency: 4, timeoutMs: 240_000 }),
      ]);
      await crashing;
      assert.ok(crashed, 'the master was killed while the storms ran');
      assert.ok(replaced > 0, 'a replacement replica joined');
      const survivors = cluster.nodes.filter((n) => n !== owner);
      for (
        const deadline = Date.now() + 60_000;
        !survivors.every((n) => cli(n.port, 'cluster', 'info').includes('cluster_state:ok'));
        await sleep(200)
      ) {
        if (Date.now() > deadline) throw new Error('the cluster did not recover after the failover');
      }
      const errors = [...claims, ...orders].filter(
        (o) => o.status === 'error' && !['sold_out', 'limit_reached'].includes(o.error!),
      );
      assert.deepEqual(
        [...new Set(errors.map((o) => o.error))].filter((e) => e !== 'unavailable'),
        [],
        'failures are the retriable unavailable',
      );
      // The same Dibs instance, never restarted, follows the new topology.
      const fenceAfter = (await dibs.locks.acquire(lockKey, { ttlMs: 1000, waitMs: 65_000 })).fence;
      assert.ok(fenceAfter > fenceBefore, `fence ${fenceAfter} after the failover > ${fenceBefore} before`);
      const summary = await assertStormInvariants(dibs, 'clr', claims, {
        codes: CODES,
        perClaimantLimit: 1,
        allowedErrors: ['unavailable'],
        allowUnacknowledged: true,
      });
      const tag = saleTag('clr', saleGroupOf('CLR'));
      const storedOrders = async () => {
        const raw = new Redis.Cluster(survivors.map((n) => ({ host: '127.0.0.1', port: n.port })));
        try {
          return new Set(await raw.hkeys(saleKey(tag, 'orders', sale.id)));
        } finally {
          raw.disconnect();
        }
      };
      const seen = await assertBuysSurvived(dibs, storedOrders, sale.id, CAP, orders);
      const replication = String((await dibs.health()).details.replication);
      console.log(
        `cluster+replicas failover with acks=replicas:1: claimed answers ${claims.filter((o) => o.status === 'claimed').length}, codes given ${summary.codesGiven}, unavailable ${errors.length}; sold ${seen.sold}, ${seen.retried} keyed buys retried; fence ${fenceBefore} → ${fenceAfter}; lost 0\n  replication now: ${replication}`,
      );
    } finally {
      // closed even when the test fails: a Cluster client left open reconnects forever and keeps the file's process alive
      await opened?.close();
      await cluster.stop();
    }
  });
});
