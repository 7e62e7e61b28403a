/**
 * Redis at maxmemory under `noeviction` while a multi-process claim storm and lock calls run. How
 * Redis judges a script out of memory: it refuses the script's first write command that may grow
 * memory (OOM) — but only if the script has not written yet; a script that already wrote runs to
 * its end, over the limit (it cannot stop halfway). So no step can be left half done; which steps
 * fail depends on their first write. Measured: a claim (its first write pops the free set) always
 * runs to completion over the limit; a lock acquire is refused before it wrote anything. Checked:
 * the client ledger and the store's audit clean (no partial claim), lock calls refused as
 * `unavailable` and working again — with a higher fence — once the limit is lifted.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { Redis } from 'ioredis';
import { openDibs } from '../../src/index.js';
import { LONG } from '../support/faults.js';
import { redisServerInstalled, startRedis, type OwnedRedis } from '../support/redis.js';
import { assertStormInvariants, runClaimStorm } from '../support/storm.js';

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
});
