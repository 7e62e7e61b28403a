/**
 * Store clock jumps on the Firestore emulator. dibs on Firestore decides every time by a
 * transaction's read time — the server's clock. The emulator (Java 17) runs with
 * test/support/clockshift.c preloaded: the JVM reads the wall clock through the C library
 * (clock_gettime / gettimeofday), so the shim moves it.
 *
 * What a jump means here differs from PostgreSQL and Redis: the emulator never hands out a read or
 * commit time below one it has already handed out (its versions only grow). So
 *
 * - a forward jump is as elsewhere: leases and holds expire early, a scheduled window opens early,
 *   a live one closes early; fences jump up with the clock, and the fenced resource refuses the
 *   first holder's late writes;
 * - a backward jump STOPS the store's clock until the real clock has caught up with the highest
 *   time already handed out: every live lease and hold lasts longer by the size of the jump, a
 *   closed window never opens again, and nothing granted during the jump expires early afterwards.
 *
 * Proved: the store clock stands still after a jump back; fences strictly increase; a forward jump
 * lets a second holder in and the first one's late write is refused; a lease and a hold outlive
 * their TTL by the store's standing clock; a hold expired by a forward jump whose unit was sold
 * stays expired; a sale window opened and closed by forward jumps stays closed after the jump
 * back; a 3-process lock storm through forward and backward jumps, judged by the history checker.
 */
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { Firestore } from '@google-cloud/firestore';
import { openDibs, type Dibs } from '../../src/index.js';
import { uniqueId } from '../support/assert.js';
import { type ClockControl, clockShiftControl, clockShiftUnavailable } from '../support/faketime.js';
import { LONG } from '../support/faults.js';
import { firestoreEmulatorInstalled, type OwnedEmulator, startFirestoreEmulator } from '../support/firestore.js';
import { GuardedResource } from '../support/guarded-resource.js';
import { formatVerdict } from '../support/history-checker.js';
import { runHistory, type WorkerRun } from '../support/history-run.js';
import type { HistoryWorkerConfig } from '../support/history-worker.js';
import { requirePostgres, TEST_PG } from '../support/postgres.js';

const pgMissing = await requirePostgres();
// Under FAULTS_LONG=1 only: the emulator's start alone takes a good part of the CI time budget.
const skip = !LONG
  ? 'FAULTS_LONG=1 only'
  : !firestoreEmulatorInstalled()
    ? 'no Firestore emulator'
    : (clockShiftUnavailable({ redis: false }) ?? pgMissing);
const codeOf = (p: Promise<unknown>) =>
  p.then(
    () => 'ok',
    (e: { code?: string }) => e.code ?? String(e),
  );

describe('Firestore emulator store clock jumps', { skip: skip || false, timeout: 400_000 }, () => {
  let emulator: OwnedEmulator;
  let clock: ClockControl;
  let raw: Firestore;
  let dibs: Dibs;
  let dir: string;
  let offsetS = 0;
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'dibs-clockshift-firestore-'));
    clock = clockShiftControl(dir);
    emulator = await startFirestoreEmulator(120_000, clock.env);
    raw = new Firestore({ projectId: emulator.projectId });
    dibs = await openDibs(emulator.storeUrl(uniqueId('c')));
  });
  after(async () => {
    await dibs?.close();
    await raw?.terminate();
    await emulator?.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  /** The emulator's clock: the read time of a fresh read. */
  const storeNow = async () => (await raw.collection('clock').doc('probe').get()).readTime.toMillis();
  /** Moves the emulator's clock `deltaS` ahead of where it reads now (it may stand still from a jump back). */
  const ahead = async (deltaS: number) => {
    offsetS = ((await storeNow()) - Date.now()) / 1000 + deltaS;
    clock.jump(offsetS);
  };
  /** Moves the clock back by `s` seconds: the emulator's clock stands still instead. */
  const back = (s: number) => {
    offsetS -= s;
    clock.jump(offsetS);
  };

  it('after a jump back the clock stands still (versions never go back); forward jumps move it', async () => {
    await ahead(0);
    const before = await storeNow();
    back(3600);
    await sleep(1500);
    const standing = await storeNow();
    assert.ok(standing >= before, `the read time went back: ${standing} < ${before}`);
    assert.ok(standing - before < 1000, `the clock moved ${standing - before} ms in 1.5 s after the jump back`);
    await ahead(120);
    const moved = (await storeNow()) - standing;
    assert.ok(moved > 115_000, `a forward jump moves it (${moved} ms)`);
    console.log(
      `[clock] Firestore: 1.5 s after a −3600 s jump the read time moved ${standing - before} ms (stands still); +120 s moved it ${(moved / 1000).toFixed(1)} s`,
    );
  });

  it('fences strictly increase; a forward jump lets a second holder in and the fenced resource refuses the first', async () => {
    const resource = new GuardedResource({ url: TEST_PG, schema: uniqueId('g').toLowerCase() });
    await resource.create();
    try {
      const fences: number[] = [];
      for (const step of [0, -3600, 3600, -86_400, 0]) {
        if (step < 0) back(-step);
        else await ahead(step);
        const lease = await dibs.locks.acquire('fence', { ttlMs: 60_000 });
        fences.push(lease.fence);
        await dibs.locks.release(lease);
      }
      for (let i = 1; i < fences.length; i++)
        assert.ok(fences[i]! > fences[i - 1]!, `fence went back: ${fences.join(', ')}`);

      await ahead(0);
      const a = await dibs.locks.acquire('invoice', { ttlMs: 30_000 });
      assert.equal(await resource.write('invoice', a.fence, 'a', 'a1'), true);
      await ahead(60);
      const b = await dibs.locks.tryAcquire('invoice', { ttlMs: 30_000 });
      assert.ok(b, 'after a 60 s forward jump the 30 s lease has expired by the store clock');
      assert.ok(b.fence > a.fence);
      assert.equal(await resource.write('invoice', b.fence, 'b', 'b1'), true);
      assert.equal(
        await resource.write('invoice', a.fence, 'a', 'a2'),
        false,
        "the first holder's late write is refused",
      );
      assert.equal(await codeOf(dibs.locks.renew(a)), 'lease_lost');
      await dibs.locks.release(b);

      // a 2 s lease outlives its TTL while the clock stands still after a jump back
      const c = await dibs.locks.acquire('short', { ttlMs: 2000 });
      back(60);
      await sleep(3000);
      assert.equal(await dibs.locks.tryAcquire('short', { ttlMs: 2000 }), null, 'still held 3 s later');
      await dibs.locks.release(c);
      console.log(
        `[clock] Firestore fences across 0, −1 h, +1 h, −1 day, 0: ${fences.join(' < ')}; +60 s: A fence ${a.fence} expired early, B fence ${b.fence}, A's late write refused; a 2 s lease still held 3 s after a −60 s jump`,
      );
    } finally {
      await resource.drop().finally(() => resource.close());
    }
  });

  it('holds expire early on a forward jump and stay expired; a hold outlives its TTL while the clock stands still', async () => {
    await ahead(0);
    const live = async (cap: number) => {
      const now = await storeNow();
      const sale = await dibs.sales.create({
        sku: `HOLD-${uniqueId('h')}`,
        startsAt: new Date(now + 1000).toISOString(),
        endsAt: new Date(now + 86_400_000).toISOString(),
        cap,
        perCustomerLimit: 1,
      });
      await ahead(2);
      return sale;
    };
    const one = await live(1);
    const { hold: alice } = await dibs.sales.reserve(one.id, 'alice', 1, 30_000);
    assert.equal(await codeOf(dibs.sales.buy(one.id, 'bob', 1)), 'sold_out', 'the hold keeps the only unit');
    await ahead(60);
    assert.equal(await codeOf(dibs.sales.buy(one.id, 'bob', 1)), 'ok', 'the 30 s hold expired by the store clock');
    back(60);
    assert.equal(await codeOf(dibs.sales.confirm(alice.id)), 'hold_expired', 'the expired hold does not come back');
    assert.deepEqual(await dibs.sales.audit(one.id), []);

    const two = await live(2);
    const { hold: carol } = await dibs.sales.reserve(two.id, 'carol', 1, 2000);
    back(60);
    await sleep(3000);
    assert.equal((await dibs.sales.get(two.id)).stats.held, 1, 'still held 3 s later: the store clock stands still');
    assert.equal(await codeOf(dibs.sales.confirm(carol.id)), 'ok');
    assert.deepEqual(await dibs.sales.audit(two.id), []);
    console.log(
      '[clock] Firestore holds: +60 s expired a 30 s hold (its unit sold; confirm hold_expired after −60 s); a 2 s hold still held 3 s after −60 s (confirmed)',
    );
  });

  it('a sale window opened and closed by forward jumps stays closed after a jump back', async () => {
    await ahead(0);
    const now = await storeNow();
    const sale = await dibs.sales.create({
      sku: `WIN-${uniqueId('w')}`,
      startsAt: new Date(now + 120_000).toISOString(),
      endsAt: new Date(now + 240_000).toISOString(),
      cap: 3,
      perCustomerLimit: 1,
    });
    const seen: string[] = [];
    const step = async (label: string, customer: string) => {
      const status = (await dibs.sales.get(sale.id)).status;
      const buy = await codeOf(dibs.sales.buy(sale.id, customer, 1));
      seen.push(`${label}: ${status}, buy ${buy}`);
      return { status, buy };
    };
    assert.deepEqual(await step('0', 'a'), { status: 'scheduled', buy: 'not_live' });
    await ahead(180);
    assert.deepEqual(await step('+180 s', 'b'), { status: 'live', buy: 'ok' });
    await ahead(120);
    assert.deepEqual(await step('+300 s', 'c'), { status: 'ended', buy: 'not_live' });
    back(300);
    assert.deepEqual(await step('back −300 s', 'd'), { status: 'ended', buy: 'not_live' }, 'it never reopens');
    assert.equal((await dibs.sales.get(sale.id)).stats.sold, 1);
    assert.deepEqual(await dibs.sales.audit(sale.id), []);
    console.log(`[clock] Firestore sale window ${seen.join('; ')}`);
  });

  it('a 3-process lock storm through forward and backward jumps: history valid on the fenced resource', async () => {
    const tag = uniqueId('j').toLowerCase();
    const resource = new GuardedResource({ url: TEST_PG, schema: tag });
    await resource.create();
    const durationMs = LONG ? 60_000 : 14_000;
    const config: HistoryWorkerConfig = {
      store: emulator.storeUrl(tag),
      resource: resource.config,
      keys: ['invoice', 'ledger'],
      rounds: 0,
      writes: 3,
      holdMs: 300,
      ttlMs: 3000,
      durationMs,
    };
    const runs: WorkerRun[] = Array.from({ length: 3 }, () => ({ config }));
    const jumps: string[] = [];
    let done = false;
    const jumping = (async () => {
      await sleep(3000);
      for (let round = 0; round < (LONG ? 4 : 1) && !done; round++)
        for (const delta of [10, -30, 5]) {
          if (delta < 0) back(-delta);
          else await ahead(delta);
          jumps.push(`${delta > 0 ? '+' : ''}${delta} s`);
          await sleep(3000);
        }
    })();
    try {
      const result = await runHistory(runs, () => resource.log(), durationMs + 120_000);
      done = true;
      await jumping;
      const overlaps = result.verdict.violations.filter((v) => v.kind === 'two-holders');
      const rest = result.verdict.violations.filter((v) => v.kind !== 'two-holders');
      console.log(
        `[clock] Firestore jumps ${jumps.join(' → ')}; retried ${result.unavailable}; overlapping holders (forward jumps) ${overlaps.length}; ${formatVerdict('lock storm', { ...result.verdict, violations: rest })}`,
      );
      assert.deepEqual(rest, []);
      assert.ok(result.verdict.writes.accepted >= 9, 'the storm made progress');
    } finally {
      done = true;
      await jumping;
      await resource.drop().finally(() => resource.close());
    }
  });
});
