/**
 * Redis at maxmemory under `noeviction` while a multi-process claim storm and lock calls run. How
 * Redis judges a script out of memory: it refuses the script's first write command that may grow
 * memory (OOM) — but only if the script has not written yet; a script that already wrote runs to
 * its end, over the limit (it cannot stop halfway). So no step can be left half done; which steps
 * fail depends on their first write. Measured: a claim (its first write pops the free set) always
 * runs to completion over the limit; a lock acquire is refused before it wrote anything. Checked:
 * the client ledger and the store's audit clean (no partial claim), lock calls refused as
 * `unavailable` and working again — with a higher fence — once the limit is lifted.
 *
 * Then buys and lock acquires together: a paced 3-process buy storm and 4 lock acquires at a time
 * in this process while maxmemory is reached, judged by the client ledger of the buys (every
 * acknowledged order stored, keyed retries replay or buy once, sold ≤ cap, the sale's audit clean)
 * and, for every lock acquire refused, no lease left behind (no partial script effect) and the key
 * taken again with a higher fence once the limit is lifted; an acquire, a renew and a release probed
 * under the limit answer ok or `unavailable`, each ok as the store kept it (test/support/lease-probes.ts).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { openDibs, type Lease } from '../../src/index.js';
import { saleGroupOf, saleKey, saleTag } from '../../src/backends/redis/keys.js';
import { assertBuysSurvived, runSaleStorm, spread, type SaleOp, type SaleOutcome } from '../support/sale-storm.js';
import { LONG } from '../support/faults.js';
import { redisServerInstalled, startRedis, type OwnedRedis } from '../support/redis.js';
import { assertStormInvariants, runClaimStorm } from '../support/storm.js';
import { takeProbeLeases } from '../support/lease-probes.js';

describe('Redis out of memory mid-storm', { skip: !redisServerInstalled(), timeout: 300_000 }, () => {
  let redis: OwnedRedis;
  before(async () => {
    redis = await startRedis(['--maxmemory-policy', 'noeviction']);
  });
  after(async () => {
    await redis?.stop();
  });

  it('claims and locks while maxmemory is reached: no partial step, lock calls `unavailable`, recovers when memory is back', async () => {
    const admin = new Redis(redis.port, '127.0.0.1');
    const store = `${redis.url}?prefix=oom&commandTimeoutMs=5000`;
    const dibs = await openDibs(store);
    try {
      const codes = LONG ? 20_000 : 3000;
      await dibs.pools.create({ name: 'oom' });
      await dibs.pools.importCodes(
        'oom',
        Array.from({ length: codes }, (_, i) => `M-${i}`),
      );
      const before = await dibs.locks.acquire('invoice', { ttlMs: 5000 });
      await dibs.locks.release(before);
      const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
      await admin.config('SET', 'maxmemory', String(Math.floor(used * 0.8)));
      let outcomes: Awaited<ReturnType<typeof runClaimStorm>>;
      let lockError: unknown;
      try {
        assert.match(String(await admin.set('probe', 'x').catch((e: unknown) => e)), /OOM/, 'Redis is out of memory');
        outcomes = await runClaimStorm({
          store,
          pool: 'oom',
          processes: 3,
          claimants: LONG ? 15_000 : 2000,
          concurrency: 4,
          timeoutMs: 240_000,
        });
        lockError = await dibs.locks.acquire('invoice', { ttlMs: 5000, waitMs: 0 }).then(
          () => null,
          (e: unknown) => e,
        );
      } finally {
        await admin.config('SET', 'maxmemory', '0');
      }
      const errors = outcomes.filter((o) => o.status === 'error' && o.error !== 'sold_out');
      const kinds = [...new Set(errors.map((o) => o.error))];
      const memory = /used_memory_human:(\S+)/.exec(await admin.info('memory'))![1];
      console.log(
        `[oom] redis: maxmemory 80 % of the memory in use (${((used * 0.8) / 1e6).toFixed(2)} MB); claims ${outcomes.length}, failed ${errors.length} (${kinds.join(', ') || 'none'}), memory grew to ${memory}; lock acquire: ${(lockError as { code?: string })?.code ?? String(lockError).slice(0, 80)}`,
      );
      const summary = await assertStormInvariants(dibs, 'oom', outcomes, {
        codes,
        perClaimantLimit: 1,
        allowedErrors: ['unavailable'],
        allowUnacknowledged: true,
      });
      assert.equal((await dibs.pools.claim('oom', 'after-oom')).status, 'claimed');
      const after = await dibs.locks.acquire('invoice', { ttlMs: 5000 });
      assert.ok(after.fence > before.fence, 'the lock works again once memory is back, with a higher fence');
      await dibs.locks.release(after);
      console.log(
        `[oom] redis: codes given ${summary.codesGiven}, ledger violations 0, audit clean; lock taken again with a higher fence`,
      );
      assert.deepEqual(
        kinds.filter((e) => e !== 'unavailable'),
        [],
        'every failed claim is the retriable unavailable',
      );
      assert.equal(
        (lockError as { code?: string })?.code,
        'unavailable',
        `a lock acquire out of memory is unavailable, got ${String(lockError)}`,
      );
    } finally {
      await dibs.close();
      admin.disconnect();
    }
  });

  it('buys and lock acquires while maxmemory is reached: only `unavailable`, no partial step, ledger clean, recovers', async () => {
    const admin = new Redis(redis.port, '127.0.0.1');
    const prefix = 'oomsale';
    const store = `${redis.url}?prefix=${prefix}&commandTimeoutMs=5000`;
    const dibs = await openDibs(store);
    try {
      const cap = 300;
      const sale = await dibs.sales.create({
        sku: 'OOM',
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap,
        perCustomerLimit: 2,
      });
      // scripts loaded and the sale's keys in place before the limit
      await dibs.sales.buy(sale.id, 'warm-up', 1);
      const keys = Array.from({ length: 16 }, (_, i) => `oom-lock-${i}`);
      const fenceBefore = new Map<string, number>();
      for (const key of keys) {
        const lease = await dibs.locks.acquire(key, { ttlMs: 5000 });
        fenceBefore.set(key, lease.fence);
        await dibs.locks.release(lease);
      }
      // lock calls probed under the limit: an acquire, a renew and a release
      const probes = await takeProbeLeases(dibs, 'oom-probe');
      const used = Number(/used_memory:(\d+)/.exec(await admin.info('memory'))![1]);
      await admin.config('SET', 'maxmemory', String(Math.floor(used * 0.8)));
      let probed = '';
      const buyers = LONG ? 3000 : 600;
      const ops: SaleOp[] = Array.from({ length: buyers }, (_, i) => ({
        customer: `buyer-${i % (buyers / 2)}`,
        kind: 'buy',
        quantity: 1,
        thinkMs: 0,
        delayMs: 5,
        ...(i % 3 === 0 ? {} : { key: `order-${i}` }),
      }));
      const locks: Array<{ key: string; lease?: Lease; error?: string }> = [];
      let outcomes: SaleOutcome[];
      try {
        assert.match(String(await admin.set('probe', 'x').catch((e: unknown) => e)), /OOM/, 'Redis is out of memory');
        outcomes = await runSaleStorm({
          store,
          sale: sale.id,
          lanes: spread(ops, 3),
          concurrency: 4,
          timeoutMs: 240_000,
          // lock acquires, 4 at a time, for as long as the buys run
          during: async (done) => {
            probed = await probes.probe();
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
          },
        });
      } finally {
        await admin.config('SET', 'maxmemory', '0');
      }
      const memory = /used_memory_human:(\S+)/.exec(await admin.info('memory'))![1];
      const buyErrors = [...new Set(outcomes.filter((o) => o.status === 'error').map((o) => o.error))];
      const lockErrors = [...new Set(locks.flatMap((l) => (l.error ? [l.error] : [])))];
      const granted = locks.filter((l) => l.lease);
      console.log(
        `[oom] redis buys: maxmemory 80 % of the memory in use (${((used * 0.8) / 1e6).toFixed(2)} MB); buys ${outcomes.length}, ok ${outcomes.filter((o) => o.status === 'ok').length}, errors ${buyErrors.join(', ') || 'none'}; lock acquires ${locks.length}, granted ${granted.length}, errors ${lockErrors.join(', ') || 'none'}; memory after ${memory}`,
      );
      // lock calls at maxmemory: ok or `unavailable`, and an ok is what the store kept
      console.log(`[oom] redis: at maxmemory ${probed}`);
      await probes.check();
      // buys: the ledger, read raw from the sale's orders hash
      const storedOrders = async () => {
        const raw = new Redis(redis.port, '127.0.0.1');
        try {
          return new Set(await raw.hkeys(saleKey(saleTag(prefix, saleGroupOf('OOM')), 'orders', sale.id)));
        } finally {
          raw.disconnect();
        }
      };
      // buys work again as soon as memory is back (before the keyed retries take the rest)
      const again = await dibs.sales.buy(sale.id, 'after-oom', 1);
      assert.ok((await storedOrders()).has(again.order.id));
      const seen = await assertBuysSurvived(dibs, storedOrders, sale.id, cap, outcomes);
      // locks: a refused acquire left no lease; each key is taken again with a higher fence
      const last = new Map(fenceBefore);
      for (const l of granted) {
        // (each key granted at most once: the 60 s lease outlives the storm, later acquires are `lock_timeout`)
        last.set(l.key, Math.max(last.get(l.key)!, l.lease!.fence));
        await dibs.locks.release(l.lease!);
      }
      for (const key of keys) {
        assert.deepEqual((await dibs.locks.inspect(key)).holders, [], `no lease left on ${key}`);
        const lease = await dibs.locks.acquire(key, { ttlMs: 5000 });
        assert.ok(lease.fence > last.get(key)!, `${key}: fence ${lease.fence} after ${last.get(key)}`);
        await dibs.locks.release(lease);
      }
      assert.equal(seen.sold, cap, 'more demand than units once memory is back: sold out exactly');
      console.log(
        `[oom] redis buys: unavailable ${seen.unavailable} (${seen.retried} keyed, retried), sold ${seen.sold}/${cap}, ledger violations 0, audit clean; every lock key free and taken again with a higher fence`,
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
    } finally {
      await dibs.close();
      admin.disconnect();
    }
  });
});
