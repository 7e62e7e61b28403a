/**
 * Store clocks that run at the wrong RATE: a test-owned PostgreSQL and redis-server under
 * test/support/clockshift.c, whose CLOCK_REALTIME runs 1.5× or 0.5× real time from an anchor (no
 * jump at the change). Every lease and hold lasts its TTL by the store's clock, so in real time:
 *
 * - a fast store clock (1.5×) shortens them: a 3 s lease lasts 2 s. runExclusive renews at 0.8 ×
 *   TTL of its own (real) time — 2.4 s, after the store has already let the lease go — so a holder
 *   can keep working on a lease the store gave to someone else: two holders at once, which is what
 *   fences are for (the fenced resource refuses the older holder once it has seen the newer fence);
 * - a slow store clock (0.5×) lengthens them: a 3 s lease lasts 6 s; a crashed holder keeps a key
 *   twice as long. Nothing unsafe.
 *
 * Proved here on each store and rate: a 2 s lease and a 2 s sale hold lapse after 2 s / rate of real
 * time (measured and printed); fences strictly increase; and a 3-process lock storm (TTL 3 s,
 * sections ≈ 2.5 s) is judged by the history checker on a fenced PostgreSQL table: no fence out of
 * order, nothing acknowledged missing, no phantom. At 1.5× every section's lease lapses at 2 s, before
 * its renewal (its holder is told, late: `lost`, asserted); at 0.5× none does. Overlapping holders
 * are counted and printed, not failed: at 1.5× they are the expected consequence, fenced off.
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

const pgMissing = await requirePostgres();
const stores: Array<{
  label: string;
  skip: string | false;
  start(): Promise<FakeClockStore>;
  scoped(url: string, tag: string): string;
}> = [
  {
    label: 'PostgreSQL',
    // FAULTS_LONG=1 only (the CI time budget): CI runs the Redis rounds
    skip: (!LONG && 'FAULTS_LONG=1 only') || (faketimeUnavailable() ?? clockShiftUnavailable() ?? pgMissing),
    start: () => startFakeClockPostgres({ clockshift: true }),
    scoped: (url, tag) => `${url}?schema=${tag}&queryTimeoutMs=5000`,
  },
  {
    label: 'Redis',
    skip: clockShiftUnavailable() ?? pgMissing,
    start: startFakeClockRedis,
    scoped: (url, tag) => `${url}?prefix=${tag}`,
  },
];

/** Real ms from `since` until `free()` answers true, polled every 25 ms (at most `limitMs`). */
async function realMsUntil(since: number, free: () => Promise<boolean>, limitMs: number): Promise<number> {
  while (!(await free())) {
    if (performance.now() - since > limitMs) throw new Error(`still not lapsed after ${limitMs} ms`);
    await sleep(25);
  }
  return performance.now() - since;
}

for (const kind of stores)
  describe(`${kind.label} store clock running fast and slow`, { skip: kind.skip || false, timeout: 300_000 }, () => {
    let store: FakeClockStore;
    before(async () => {
      store = await kind.start();
    });
    after(async () => {
      await store?.stop();
    });

    // CI (the time budget): the fast lease/hold round on Redis; FAULTS_LONG=1: everything
    for (const rate of LONG ? [1.5, 0.5] : [1.5])
      it(`at ${rate}× real time a 2 s lease and a 2 s hold last 2 s / ${rate} of real time; fences still grow`, async () => {
        const dibs = await openDibs(kind.scoped(store.url, uniqueId('r').toLowerCase()));
        try {
          store.rate!(rate);
          // the store clock's own rate over 1.5 s of real time, each reading placed at the middle of
          // its round trip (a loaded machine stretches round trips)
          const reading = async () => {
            const sent = performance.now();
            const at = await store.now();
            return { at, real: (sent + performance.now()) / 2 };
          };
          const first = await reading();
          await sleep(1500);
          const second = await reading();
          const measured = (second.at - first.at) / (second.real - first.real);
          assert.ok(Math.abs(measured - rate) < 0.2, `store clock runs at ${measured.toFixed(2)}×, wanted ${rate}×`);

          const fences: number[] = [];
          const a = await dibs.locks.acquire('invoice', { ttlMs: 2000 });
          const sent = performance.now();
          fences.push(a.fence);
          let b: Awaited<ReturnType<typeof dibs.locks.tryAcquire>> = null;
          const leaseMs = await realMsUntil(
            sent,
            async () => (b = await dibs.locks.tryAcquire('invoice', { ttlMs: 2000 })) !== null,
            10_000,
          );
          fences.push(b!.fence);
          await dibs.locks.release(b!);

          const sale = await dibs.sales.create({
            sku: `RATE-${uniqueId('s')}`,
            startsAt: new Date((await store.now()) + 200).toISOString(),
            endsAt: new Date((await store.now()) + 3_600_000).toISOString(),
            cap: 1,
            perCustomerLimit: 1,
          });
          await realMsUntil(performance.now(), async () => (await dibs.sales.get(sale.id)).status === 'live', 10_000);
          const { hold } = await dibs.sales.reserve(sale.id, 'alice', 1, 2000);
          const held = performance.now();
          const holdMs = await realMsUntil(held, async () => (await dibs.sales.get(sale.id)).stats.held === 0, 10_000);
          assert.equal(
            await dibs.sales.confirm(hold.id).then(
              () => 'ok',
              (e: { code?: string }) => e.code,
            ),
            'hold_expired',
          );
          for (let i = 0; i < 3; i++) {
            const lease = await dibs.locks.acquire('invoice', { ttlMs: 2000 });
            fences.push(lease.fence);
            await dibs.locks.release(lease);
          }
          console.log(
            `[clock-rate] ${kind.label} at ${rate}× (measured ${measured.toFixed(2)}×): a 2 s lease lapsed after ${leaseMs.toFixed(0)} ms real, a 2 s hold after ${holdMs.toFixed(0)} ms real; fences ${fences.join(' < ')}`,
          );
          // polled every 25 ms over a loaded machine: generous bounds around 2000 / rate
          const expected = 2000 / rate;
          assert.ok(
            leaseMs > expected * 0.75 && leaseMs < expected * 1.5 + 500,
            `lease lasted ${leaseMs} ms, ≈ ${expected}`,
          );
          assert.ok(
            holdMs > expected * 0.75 && holdMs < expected * 1.5 + 500,
            `hold lasted ${holdMs} ms, ≈ ${expected}`,
          );
          for (let i = 1; i < fences.length; i++)
            assert.ok(fences[i]! > fences[i - 1]!, `fence went back: ${fences.join(', ')}`);
        } finally {
          store.jump(0);
          await dibs.close();
        }
      });

    for (const rate of LONG ? [1.5, 0.5] : [])
      it(`a 3-process lock storm with the store clock at ${rate}×: history valid on the fenced resource`, async () => {
        const tag = uniqueId('q').toLowerCase();
        await (await openDibs(kind.scoped(store.url, tag))).close(); // migrate once, before the workers
        const resource = new GuardedResource({ url: TEST_PG, schema: tag });
        await resource.create();
        const durationMs = 20_000;
        const config: HistoryWorkerConfig = {
          store: kind.scoped(store.url, tag),
          resource: resource.config,
          keys: ['invoice', 'ledger'],
          rounds: 0,
          writes: 3,
          // sections ≈ 2.5 s with a 3 s TTL: at 1.5× the store lets the lease go after 2 s, before
          // runExclusive's renewal at 2.4 s
          holdMs: 800,
          ttlMs: 3000,
          durationMs,
        };
        const runs: WorkerRun[] = Array.from({ length: 3 }, () => ({ config }));
        store.rate!(rate);
        try {
          const result = await runHistory(runs, () => resource.log(), durationMs + 120_000);
          const overlaps = result.verdict.violations.filter((v) => v.kind === 'two-holders');
          const rest = result.verdict.violations.filter((v) => v.kind !== 'two-holders');
          console.log(
            `[clock-rate] ${kind.label} at ${rate}×: retried ${result.unavailable}; overlapping holders ${overlaps.length}; ${formatVerdict('lock storm', { ...result.verdict, violations: rest })}`,
          );
          assert.deepEqual(rest, []);
          assert.ok(result.verdict.writes.accepted >= 12, 'the storm made progress');
          if (rate < 1) assert.deepEqual(overlaps, [], 'a slow store clock only lengthens leases');
          // at more than 1 / 0.8 = 1.25× the renewal comes after the store let the lease go: lost
          if (rate > 1.25) assert.ok(result.verdict.lost > 0, 'leases lapsed before their renewal');
          else assert.equal(result.verdict.lost, 0, 'renewed in time');
        } finally {
          store.jump(0);
          await resource.drop().finally(() => resource.close());
        }
      });
  });
