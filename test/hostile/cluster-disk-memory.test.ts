/**
 * Redis Cluster (3 masters) on a full disk and at maxmemory, for claims, buys and locks.
 *
 * Full disk: every node's AOF (`appendfsync always`) and nodes.conf on one small tmpfs, filled in
 * the middle of each storm and freed 1.5 s later. A master that cannot log a write exits (as a
 * single Redis does); its supervisor (the test) restarts the nodes that exited once space is back,
 * they replay their AOF and rejoin with their slots. Judged by the client ledgers: claims
 * (test/support/storm.ts), buys (test/support/full-disk-sales.ts), locks on a guarded resource
 * (test/support/full-disk-locks.ts) — only `unavailable`, nothing acknowledged lost, recovery.
 *
 * maxmemory (the same cluster, once its disk is free again): every master's `maxmemory` lowered to 80 % of its memory in use (`noeviction`) while
 * a 3-process claim storm, a 3-process paced buy storm and lock acquires run at once. Redis refuses
 * a script's first write that may grow memory only while the script has written nothing, so no
 * step is half done; checked: the claim ledger and pool audit, the buy ledger and sale audit, no
 * lease left by a refused acquire, and after lifting the limit everything works again with higher fences.
 */
import assert from 'node:assert/strict';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Cluster, Redis } from 'ioredis';
import { openDibs, type Dibs, type Lease } from '../../src/index.js';
import { saleGroupOf, saleKey, saleTag } from '../../src/backends/redis/keys.js';
import { LONG } from '../support/faults.js';
import { buyStormOnFullDisk } from '../support/full-disk-sales.js';
import { lockRoundOnFullDisk } from '../support/full-disk-locks.js';
import { takeProbeLeases, whenBack } from '../support/lease-probes.js';
import { diskFault, smallDiskForSuite, supervisedCluster, tmpfsUnavailable } from '../support/full-disk.js';
import { requirePostgres } from '../support/postgres.js';
import { redisServerInstalled, startCluster, type OwnedCluster } from '../support/redis.js';
import { assertBuysSurvived, runSaleStorm, spread, type SaleOp, type SaleOutcome } from '../support/sale-storm.js';
import { assertStormInvariants, runClaimStorm } from '../support/storm.js';

const redisSkip = redisServerInstalled() ? false : 'redis-server missing';
const diskSkip = tmpfsUnavailable() ?? ((await requirePostgres()) || null);

/** The sale's orders, read raw from the master that holds them. */
function ordersOf(cluster: OwnedCluster, prefix: string, sku: string) {
  return async (saleId: string) => {
    const raw = new Cluster(cluster.nodes.map((n) => ({ host: '127.0.0.1', port: n.port })));
    try {
      return new Set(await raw.hkeys(saleKey(saleTag(prefix, saleGroupOf(sku)), 'orders', saleId)));
    } finally {
      raw.disconnect();
    }
  };
}

describe('Redis Cluster on a full disk (AOF always) and at maxmemory (noeviction)', {
  skip: redisSkip || diskSkip || false,
  timeout: 300_000,
}, () => {
  const smallDisk = smallDiskForSuite(48);
  let cluster: OwnedCluster;
  let dibs: Dibs;
  let store: string;
  const prefix = 'cdisk';
  before(async () => {
    cluster = await startCluster(
      ['--appendonly', 'yes', '--appendfsync', 'always', '--maxmemory-policy', 'noeviction'],
      {
        dirFor: (i) => {
          const dir = join(smallDisk().dir, `node${i}`);
          mkdirSync(dir);
          return dir;
        },
      },
    );
    store = `${cluster.url}?prefix=${prefix}&commandTimeoutMs=2000`;
    dibs = await openDibs(store);
  });
  after(async () => {
    await dibs?.close();
    await cluster?.stop();
  });
  const fault = () => diskFault(smallDisk(), { afterMs: 300, fullMs: 1500, supervised: supervisedCluster(cluster) });

  it('claims: only `unavailable`, nothing acknowledged lost, recovers', async () => {
    const codes = LONG ? 20_000 : 2000;
    await dibs.pools.create({ name: 'cdisk' });
    await dibs.pools.importCodes(
      'cdisk',
      Array.from({ length: codes }, (_, i) => `C-${i}`),
    );
    let faulting: Promise<string> = Promise.resolve('');
    const outcomes = await runClaimStorm({
      store,
      pool: 'cdisk',
      processes: 3,
      claimants: LONG ? 15_000 : 1500,
      paceMs: 2,
      concurrency: 4,
      timeoutMs: 240_000,
      onStart: () => {
        faulting = fault();
      },
    });
    const faultLog = await faulting;
    const errors = outcomes.filter((o) => o.status === 'error' && o.error !== 'sold_out');
    const kinds = [...new Set(errors.map((o) => o.error))];
    console.log(
      `[disk] redis cluster claims: ${faultLog}; answers ${outcomes.length}, failed ${errors.length} (${kinds.join(', ') || 'none'})`,
    );
    assert.deepEqual(
      kinds.filter((e) => e !== 'unavailable'),
      [],
      'every failure is the retriable unavailable',
    );
    assert.ok(errors.length > 0, 'the full disk was felt by the clients');
    const again = await whenBack(() => dibs.pools.claim('cdisk', 'after-the-disk-was-freed'));
    assert.equal(again.status, 'claimed');
    const summary = await assertStormInvariants(dibs, 'cdisk', outcomes, {
      codes,
      perClaimantLimit: 1,
      allowedErrors: ['unavailable'],
      allowUnacknowledged: true,
    });
    console.log(`[disk] redis cluster claims: codes given ${summary.codesGiven}, ledger violations 0, audit clean`);
  });

  // (the CI budget: buys and locks on a Cluster are judged under maxmemory below in every run, on
  // a full disk with FAULTS_LONG=1; locks on a full disk of each single store in full-disk-locks.test.ts)
  it('buys: only `unavailable`, nothing acknowledged lost, sold ≤ cap, recovers', {
    skip: LONG ? false : 'FAULTS_LONG=1',
  }, async () => {
    await buyStormOnFullDisk({
      label: 'redis cluster AOF always',
      sku: 'CDISK',
      cap: LONG ? 7000 : 800,
      buyers: LONG ? 6000 : 600,
      delayMs: 20,
      store,
      dibs,
      storedOrders: ordersOf(cluster, prefix, 'CDISK'),
      fault,
    });
  });

  it('locks: `unavailable` or kept, history valid, fences only grow, recovers', {
    skip: LONG ? false : 'FAULTS_LONG=1',
  }, async () => {
    await lockRoundOnFullDisk({
      label: 'redis cluster AOF always',
      store,
      dibs,
      durationMs: LONG ? 20_000 : 4000,
      fault: (whileFull) =>
        diskFault(smallDisk(), { afterMs: 300, fullMs: 1500, whileFull, supervised: supervisedCluster(cluster) }),
    });
  });

  // the same cluster, its disk freed: maxmemory
  it('claims, buys and lock acquires at once: no partial step, only `unavailable`, ledgers clean, recovers', async () => {
    const prefix = 'coom';
    const store = `${cluster.url}?prefix=${prefix}&commandTimeoutMs=5000`;
    const dibs = await openDibs(store);
    const admins = cluster.nodes.map((n) => new Redis(n.port, '127.0.0.1'));
    try {
      const codes = LONG ? 12_000 : 2000;
      await dibs.pools.create({ name: 'coom' });
      await dibs.pools.importCodes(
        'coom',
        Array.from({ length: codes }, (_, i) => `O-${i}`),
      );
      const cap = LONG ? 300 : 150;
      const sale = await dibs.sales.create({
        sku: 'COOM',
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap,
        perCustomerLimit: 2,
      });
      await dibs.sales.buy(sale.id, 'warm-up', 1);
      // lock keys spread over the masters (their slots differ)
      const keys = Array.from({ length: 12 }, (_, i) => `coom-lock-${i}`);
      const fenceBefore = new Map<string, number>();
      for (const key of keys) {
        const lease = await dibs.locks.acquire(key, { ttlMs: 5000 });
        fenceBefore.set(key, lease.fence);
        await dibs.locks.release(lease);
      }
      // lock calls probed under the limit: an acquire, a renew and a release
      const probes = await takeProbeLeases(dibs, 'coom-probe');
      const used = await Promise.all(
        admins.map(async (a) => Number(/used_memory:(\d+)/.exec(await a.info('memory'))![1])),
      );
      await Promise.all(admins.map((a, i) => a.config('SET', 'maxmemory', String(Math.floor(used[i]! * 0.8)))));
      let probed = '';
      const buyers = LONG ? 3000 : 300;
      const ops: SaleOp[] = Array.from({ length: buyers }, (_, i) => ({
        customer: `buyer-${i % (buyers / 2)}`,
        kind: 'buy',
        quantity: 1,
        thinkMs: 0,
        delayMs: 5,
        ...(i % 3 === 0 ? {} : { key: `order-${i}` }),
      }));
      const locks: Array<{ key: string; lease?: Lease; error?: string }> = [];
      let claims: Awaited<ReturnType<typeof runClaimStorm>> = [];
      let buys: SaleOutcome[];
      try {
        buys = await runSaleStorm({
          store,
          sale: sale.id,
          lanes: spread(ops, 3),
          concurrency: 4,
          timeoutMs: 240_000,
          during: async (done) => {
            probed = await probes.probe();
            const claiming = runClaimStorm({
              store,
              pool: 'coom',
              processes: 3,
              claimants: LONG ? 10_000 : 900,
              concurrency: 4,
              timeoutMs: 240_000,
            }).then((o) => {
              claims = o;
            });
            let i = 0;
            while (!done()) {
              await Promise.all(
                Array.from({ length: 4 }, async () => {
                  const key = keys[i++ % keys.length]!;
                  try {
                    locks.push({ key, lease: await dibs.locks.acquire(key, { ttlMs: 60_000, waitMs: 0 }) });
                  } catch (error) {
                    locks.push({ key, error: (error as { code?: string }).code ?? String(error) });
                  }
                }),
              );
              await sleep(20);
            }
            await claiming;
          },
        });
      } finally {
        await Promise.all(admins.map((a) => a.config('SET', 'maxmemory', '0')));
      }
      const claimErrors = [...new Set(claims.filter((o) => o.status === 'error').map((o) => o.error))];
      const buyErrors = [...new Set(buys.filter((o) => o.status === 'error').map((o) => o.error))];
      const lockErrors = [...new Set(locks.flatMap((l) => (l.error ? [l.error] : [])))];
      const granted = locks.filter((l) => l.lease);
      console.log(
        `[oom] redis cluster: maxmemory 80 % of each master's memory in use (${used.map((u) => ((u * 0.8) / 1e6).toFixed(2)).join(' / ')} MB); claims ${claims.length}, failed ${claims.filter((o) => o.status === 'error').length} (${claimErrors.join(', ') || 'none'}); buys ${buys.length}, ok ${buys.filter((o) => o.status === 'ok').length} (${buyErrors.join(', ') || 'none'}); lock acquires ${locks.length}, granted ${granted.length} (${lockErrors.join(', ') || 'none'})`,
      );
      assert.deepEqual(
        claimErrors.filter((e) => e !== 'unavailable' && e !== 'sold_out'),
        [],
        'every failed claim is the retriable unavailable',
      );
      assert.deepEqual(
        buyErrors.filter((e) => !['unavailable', 'sold_out', 'limit_reached'].includes(e!)),
        [],
        'every refused buy is the retriable unavailable',
      );
      assert.deepEqual(
        lockErrors.filter((e) => e !== 'unavailable' && e !== 'lock_timeout'),
        [],
        'every refused lock acquire is the retriable unavailable',
      );
      // lock calls at maxmemory: ok or `unavailable`, and an ok is what the store kept
      console.log(`[oom] redis cluster: at maxmemory ${probed}`);
      await probes.check();
      assert.ok(
        [...claims, ...buys].some((o) => o.error === 'unavailable') || lockErrors.includes('unavailable'),
        'the memory limit was felt',
      );
      // claims: the ledger and the pool's audit
      const claimSummary = await assertStormInvariants(dibs, 'coom', claims, {
        codes,
        perClaimantLimit: 1,
        allowedErrors: ['unavailable'],
        allowUnacknowledged: true,
      });
      // buys: the ledger (keyed retries replay or buy once), sold out once memory is back
      const seen = await assertBuysSurvived(dibs, () => ordersOf(cluster, prefix, 'COOM')(sale.id), sale.id, cap, buys);
      // locks: a refused acquire left no lease; each key is taken again with a higher fence
      const last = new Map(fenceBefore);
      for (const l of granted) {
        last.set(l.key, Math.max(last.get(l.key)!, l.lease!.fence));
        await dibs.locks.release(l.lease!);
      }
      for (const key of keys) {
        assert.deepEqual((await dibs.locks.inspect(key)).holders, [], `no lease left on ${key}`);
        const lease = await dibs.locks.acquire(key, { ttlMs: 5000 });
        assert.ok(lease.fence > last.get(key)!, `${key}: fence ${lease.fence} after ${last.get(key)}`);
        await dibs.locks.release(lease);
      }
      assert.equal((await dibs.pools.claim('coom', 'after-oom')).status, 'claimed');
      console.log(
        `[oom] redis cluster: codes given ${claimSummary.codesGiven}, claim ledger and audit clean; buys unavailable ${seen.unavailable} (${seen.retried} keyed, retried), sold ${seen.sold}/${cap}, ledger and audit clean; every lock key free and taken again with a higher fence`,
      );
    } finally {
      await dibs.close();
      for (const a of admins) a.disconnect();
    }
  });
});
