/**
 * Store clock jumps under locks: a test-owned PostgreSQL under libfaketime and a test-owned
 * redis-server with a preloaded clock shift (test/support/faketime.ts), whose wall clock the test
 * moves forward and back while dibs' locks run on it. What a jump means:
 *
 * - forward by more than a TTL: every live lease has expired by the store's clock, early by the
 *   holder's — the next holder is granted while the first still believes it holds. That is what
 *   fences are for: the guarded resource must refuse the old holder's writes once it has seen the
 *   new fence (and fences jump up with the clock, which is fine);
 * - backward: leases granted now last longer by the store's clock (the amount of the jump), and
 *   fences must still grow — max(last + 1, clock) continues from the last fence.
 *
 * Proved here, on each store: fences strictly increase across ±1 h and ±1 day jumps; a forward
 * jump lets a second holder in and the fenced resource refuses the first's late write; a 3-process
 * lock storm through a sequence of jumps, judged by the history checker on a fenced PostgreSQL
 * table: no fence out of order, nothing acknowledged missing (overlapping holders are counted and
 * printed — a forward jump causes them by definition).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { openDibs } from '../../src/index.js';
import { uniqueId } from '../support/assert.js';
import {
  clockShiftUnavailable,
  faketimeUnavailable,
  startFakeClockPostgres,
  startFakeClockRedis,
  type FakeClockStore,
} from '../support/faketime.js';
import { LONG } from '../support/faults.js';
import { GuardedResource } from '../support/guarded-resource.js';
import { formatVerdict } from '../support/history-checker.js';
import { runHistory, type WorkerRun } from '../support/history-run.js';
import type { HistoryWorkerConfig } from '../support/history-worker.js';
import { requirePostgres, TEST_PG } from '../support/postgres.js';

// The guarded resource is a table on the shared PostgreSQL for both stores.
const pgMissing = await requirePostgres();
const stores: Array<{
  label: string;
  skip: string | false;
  start(): Promise<FakeClockStore>;
  scoped(url: string, tag: string): string;
}> = [
  {
    label: 'PostgreSQL',
    skip: faketimeUnavailable() ?? pgMissing,
    start: startFakeClockPostgres,
    scoped: (url, tag) => `${url}?schema=${tag}&queryTimeoutMs=5000`,
  },
  {
    label: 'Redis',
    skip: clockShiftUnavailable() ?? pgMissing,
    start: startFakeClockRedis,
    scoped: (url, tag) => `${url}?prefix=${tag}`,
  },
];

for (const kind of stores)
  describe(`${kind.label} store clock jumps under locks`, { skip: kind.skip || false, timeout: 300_000 }, () => {
    let store: FakeClockStore;
    before(async () => {
      store = await kind.start();
    });
    after(async () => {
      await store?.stop();
    });

    const serverOffsetS = async () => ((await store.now()) - Date.now()) / 1000;

    it('fences strictly increase across forward and backward jumps; leases follow the store clock', async () => {
      const dibs = await openDibs(kind.scoped(store.url, 'fences'));
      try {
        const fences: number[] = [];
        const steps: string[] = [];
        for (const offset of [0, -3600, -3600, 3600, -86_400, 0, 0]) {
          store.jump(offset);
          const seen = await serverOffsetS();
          assert.ok(Math.abs(seen - offset) < 5, `store clock at ${seen.toFixed(1)} s, wanted ${offset}`);
          const lease = await dibs.locks.acquire('invoice', { ttlMs: 60_000 });
          // the lease's expiry is by the store's (jumped) clock
          const expiresIn = (Date.parse(lease.expiresAt) - Date.now()) / 1000;
          assert.ok(Math.abs(expiresIn - (offset + 60)) < 10, `expiresAt ${lease.expiresAt} at offset ${offset}`);
          fences.push(lease.fence);
          steps.push(`${offset >= 0 ? '+' : ''}${offset} s → ${lease.fence}`);
          await dibs.locks.release(lease);
        }
        console.log(`[clock] ${kind.label} fences across jumps: ${steps.join(', ')}`);
        for (let i = 1; i < fences.length; i++)
          assert.ok(fences[i]! > fences[i - 1]!, `fence went back: ${steps.join(', ')}`);
      } finally {
        store.jump(0);
        await dibs.close();
      }
    });

    it('a forward jump past the TTL lets a second holder in; the fenced resource refuses the first', async () => {
      const dibs = await openDibs(kind.scoped(store.url, 'forward'));
      const resource = new GuardedResource({ url: TEST_PG, schema: uniqueId('g').toLowerCase() });
      await resource.create();
      try {
        const a = await dibs.locks.acquire('invoice', { ttlMs: 30_000 });
        assert.equal(await resource.write('invoice', a.fence, 'a', 'a1'), true);
        store.jump(60);
        const b = await dibs.locks.tryAcquire('invoice', { ttlMs: 30_000 });
        assert.ok(b, 'after a 60 s forward jump the 30 s lease has expired by the store clock');
        assert.ok(b.fence > a.fence);
        assert.equal(await resource.write('invoice', b.fence, 'b', 'b1'), true);
        assert.equal(
          await resource.write('invoice', a.fence, 'a', 'a2'),
          false,
          "the first holder's late write is refused",
        );
        await assert.rejects(dibs.locks.renew(a), (e: { code?: string }) => e.code === 'lease_lost');
        store.jump(0);
        // back at the real clock, B's lease lasts 60 s longer by the store's clock than it was granted for
        const info = await dibs.locks.inspect('invoice');
        assert.equal(info.holders.length, 1);
        console.log(
          `[clock] ${kind.label} forward jump +60 s: A fence ${a.fence} expired early, B fence ${b.fence} granted, A's late write refused; after the jump back B's lease ends in ${((Date.parse(info.holders[0]!.expiresAt) - Date.now()) / 1000).toFixed(0)} s`,
        );
        await dibs.locks.release(b);
      } finally {
        store.jump(0);
        await dibs.close();
        await resource.drop().finally(() => resource.close());
      }
    });

    it('a 3-process lock storm through forward and backward jumps: history valid on the fenced resource', async () => {
      const tag = uniqueId('j').toLowerCase();
      const setup = await openDibs(kind.scoped(store.url, tag));
      await setup.close();
      const resource = new GuardedResource({ url: TEST_PG, schema: tag });
      await resource.create();
      const durationMs = LONG ? 60_000 : 16_000;
      const config: HistoryWorkerConfig = {
        store: kind.scoped(store.url, tag),
        resource: resource.config,
        keys: ['invoice', 'ledger'],
        rounds: 0,
        writes: 3,
        holdMs: 300,
        ttlMs: 3000,
        durationMs,
      };
      const runs: WorkerRun[] = Array.from({ length: 3 }, () => ({ config }));
      // offset (s) and how long it holds: forward past the TTL, back, far back, forward again, home
      const schedule: Array<[number, number]> = [
        [10, 3000],
        [0, 3000],
        [-30, 3000],
        [5, 2000],
        [0, 0],
      ];
      const jumps: string[] = [];
      let done = false;
      const jumping = (async () => {
        await sleep(2500);
        for (let round = 0; round < (LONG ? 4 : 1) && !done; round++) {
          for (const [offset, ms] of schedule) {
            store.jump(offset);
            jumps.push(`${offset >= 0 ? '+' : ''}${offset} s`);
            await sleep(ms);
          }
        }
      })();
      try {
        const result = await runHistory(runs, () => resource.log(), durationMs + 120_000);
        done = true;
        await jumping;
        const overlaps = result.verdict.violations.filter((v) => v.kind === 'two-holders');
        console.log(
          `[clock] ${kind.label} jumps ${jumps.join(' → ')}; retried ${result.unavailable}; overlapping holders (forward jumps) ${overlaps.length}`,
        );
        console.log(
          formatVerdict(`${kind.label} lock storm through store clock jumps`, {
            ...result.verdict,
            violations: result.verdict.violations.filter((v) => v.kind !== 'two-holders'),
          }),
        );
        assert.deepEqual(
          result.verdict.violations.filter((v) => v.kind !== 'two-holders'),
          [],
        );
        assert.ok(result.verdict.writes.accepted >= 40, 'the storm made progress');
        // Whether a forward jump lands mid-section with a new acquire right behind it is up to timing
        // (a waiter already in line sleeps until the expiry it was told, by the real clock); the test
        // above proves that case deterministically. Printed: refused writes = late holders fenced off.
      } finally {
        done = true;
        await jumping;
        store.jump(0);
        await resource.drop().finally(() => resource.close());
      }
    });
  });
