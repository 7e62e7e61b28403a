/**
 * Full disks: the store's files on a small tmpfs that the test fills completely in the middle of a
 * multi-process claim storm, then frees. Every failed step must be `unavailable` (the retriable
 * 503), nothing acknowledged may be lost (the client ledger is checked against the store, also
 * after reopening it), and the store must work again by itself once space is freed.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { assertStormInvariants, runClaimStorm } from '../support/storm.js';
import { diskFault, smallDiskForSuite, supervisedRedis, tmpfsUnavailable } from '../support/full-disk.js';
import { LONG } from '../support/faults.js';
import { redisServerInstalled, startRedis, type OwnedRedis } from '../support/redis.js';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';

const skip = tmpfsUnavailable();

describe('SQLite on a full disk', { skip: skip ?? false, timeout: 300_000 }, () => {
  // 16 MB of it held in reserve until the disk is freed: a storm's WAL can fill the rest by itself
  // before the fault does, and freeing must still give room back
  const smallDisk = smallDiskForSuite(48, 16);
  let store: string;
  let dibs: Dibs;
  before(async () => {
    store = `sqlite:${smallDisk().dir}/dibs.db`;
    dibs = await openDibs(store);
  });
  after(async () => {
    await dibs?.close();
  });

  it('a claim storm while the disk fills up and is freed: only `unavailable`, nothing acknowledged lost, recovers by itself', async () => {
    const codes = LONG ? 20_000 : 3000;
    await dibs.pools.create({ name: 'disk' });
    await dibs.pools.importCodes(
      'disk',
      Array.from({ length: codes }, (_, i) => `D-${i}`),
    );
    const disk = smallDisk();
    let fault: Promise<string> = Promise.resolve('');
    const outcomes = await runClaimStorm({
      store,
      pool: 'disk',
      processes: 3,
      claimants: LONG ? 30_000 : 4000,
      concurrency: 4,
      timeoutMs: 240_000,
      onStart: () => {
        fault = diskFault(disk, { afterMs: 200 });
      },
    });
    const faultLog = await fault;
    const errors = outcomes.filter((o) => o.status === 'error' && o.error !== 'sold_out');
    const kinds = [...new Set(errors.map((o) => o.error))];
    console.log(
      `[disk] sqlite claims: ${faultLog}; answers ${outcomes.length}, failed ${errors.length} (${kinds.join(', ') || 'none'})`,
    );
    assert.deepEqual(
      kinds.filter((e) => e !== 'unavailable'),
      [],
      'every failure on the full disk is the retriable unavailable',
    );
    assert.ok(errors.length > 0, 'the full disk was felt by the clients');
    // still full: this process' handle fails the same way; freed: the same handle works again
    await assert.rejects(dibs.pools.claim('disk', 'while-full'), (e: { code?: string }) => e.code === 'unavailable');
    disk.free();
    const again = await dibs.pools.claim('disk', 'after-the-disk-was-freed');
    assert.equal(again.status, 'claimed', 'the same handle claims again once space is freed');
    // a second wave from new processes: no failures at all
    const wave = await runClaimStorm({
      store,
      pool: 'disk',
      processes: 3,
      claimants: 600,
      claimantPrefix: 'after',
      concurrency: 4,
      timeoutMs: 240_000,
    });
    assert.deepEqual(
      wave.filter((o) => o.status === 'error' && o.error !== 'sold_out'),
      [],
      'after the disk was freed every claim succeeds',
    );
    const all = [
      ...outcomes,
      ...wave,
      { claimant: 'after-the-disk-was-freed', attempt: 0, status: 'claimed' as const, code: again.code, ms: 0 },
    ];
    const expect = { codes, perClaimantLimit: 1, allowedErrors: ['unavailable'], allowUnacknowledged: true };
    const summary = await assertStormInvariants(dibs, 'disk', all, expect);
    await dibs.close();
    dibs = await openDibs(store);
    await assertStormInvariants(dibs, 'disk', all, expect);
    console.log(
      `[disk] sqlite: after freeing, ${wave.length} claims from new processes without a failure; codes given ${summary.codesGiven}, ledger violations 0 (also after reopening)`,
    );
  });
});

/**
 * Redis with AOF on a small tmpfs. What a full disk does depends on the fsync policy:
 * `appendfsync always` — Redis cannot answer a write it could not log, so it exits ("Can't recover
 * from AOF write error"); the clients see `unavailable`, and after space is freed and Redis is
 * restarted (by its supervisor; here the test) the AOF replays every acknowledged write.
 * `appendfsync everysec` — Redis stays up and refuses writes while the AOF cannot be written
 * (MISCONF), and accepts them again once it can.
 */
describe('Redis AOF on a full disk', {
  skip: skip ?? (redisServerInstalled() ? false : 'redis-server missing'),
  timeout: 300_000,
}, () => {
  const smallDisk = smallDiskForSuite(24);
  const owned: OwnedRedis[] = [];
  after(async () => {
    for (const r of owned) await r.stop().catch(() => undefined);
  });

  for (const policy of ['always', 'everysec'] as const) {
    it(`appendfsync ${policy}: claim storm while the disk fills up: only \`unavailable\`, nothing acknowledged lost, recovers`, async () => {
      const disk = smallDisk();
      const dir = join(disk.dir, policy);
      mkdirSync(dir);
      const redis = await startRedis(['--appendonly', 'yes', '--appendfsync', policy], dir);
      owned.push(redis);
      const store = `${redis.url}?prefix=disk&commandTimeoutMs=2000`;
      const dibs = await openDibs(store);
      try {
        const codes = LONG ? 20_000 : 3000;
        await dibs.pools.create({ name: 'disk' });
        await dibs.pools.importCodes(
          'disk',
          Array.from({ length: codes }, (_, i) => `R-${i}`),
        );
        // The fault: fill the disk 150 ms in, keep it full for 2 s, free it; a Redis that exited is
        // restarted on its port once space is back, as its supervisor would.
        const supervised = supervisedRedis(redis);
        let fault: Promise<string> = Promise.resolve('');
        const start = () => {
          fault = diskFault(disk, { afterMs: 150, fullMs: 2000, supervised });
        };
        const outcomes = await runClaimStorm({
          store,
          pool: 'disk',
          processes: 3,
          claimants: LONG ? 30_000 : 3000,
          concurrency: 4,
          timeoutMs: 240_000,
          onStart: start,
        });
        const faultLog = await fault;
        const errors = outcomes.filter((o) => o.status === 'error' && o.error !== 'sold_out');
        const kinds = [...new Set(errors.map((o) => o.error))];
        console.log(
          `[disk] redis AOF ${policy}: ${faultLog}; answers ${outcomes.length}, failed ${errors.length} (${kinds.join(', ') || 'none'})`,
        );
        assert.ok(errors.length > 0, 'the full disk was felt by the clients');
        if (supervised.down()) await supervised.restart();
        // recovers: this process' handle, open through it all, claims again (reconnecting by itself)
        for (let attempt = 0; ; attempt++) {
          try {
            assert.equal((await dibs.pools.claim('disk', 'after-free')).status, 'claimed');
            break;
          } catch (error) {
            if ((error as { code?: string }).code !== 'unavailable' || attempt > 50) throw error;
            await sleep(100);
          }
        }
        // (the claim of 'after-free' is one the ledger has no answer for: allowUnacknowledged)
        const summary = await assertStormInvariants(dibs, 'disk', outcomes, {
          codes,
          perClaimantLimit: 1,
          allowedErrors: ['unavailable'],
          allowUnacknowledged: true,
        });
        console.log(`[disk] redis AOF ${policy}: codes given ${summary.codesGiven}, ledger violations 0`);
        assert.deepEqual(
          kinds.filter((e) => e !== 'unavailable'),
          [],
          'every failure on the full disk is the retriable unavailable',
        );
      } finally {
        disk.free();
        await dibs.close();
      }
    });
  }
});
