/**
 * A lock round on a full disk (test/hostile/full-disk-locks.test.ts): 3 history worker processes
 * take two keys with runExclusive and write through the fenced PostgreSQL resource (on the shared
 * server, never on the full disk) while the test fills the store's disk, keeps it full, frees it
 * and restarts a store that stopped. The fault starts once the workers are writing, and the workers
 * run until the test saw it over and them writing again (states, not a storm length a loaded
 * machine outruns: with 3 s rounds the workers of a round at load 30–50 had ended before the disk
 * filled, and a start-up past the 93 s bound was SIGKILLed). Meanwhile this process probes acquire,
 * renew and release once while the disk is full.
 *
 * Judged by:
 * - the history checker (test/support/history-checker.ts) on the resource's log: no two holders
 *   that both wrote in one section, fences in order, no acknowledged write missing;
 * - every failed lock call `unavailable` (a worker ends with an error on anything else);
 * - the probes' answers against the store once it is back: an acquire or renew answered ok is a
 *   lease the store kept (never a lease the store did not keep), a release answered ok left no holder;
 * - fences only grow: per key, in grant order, and the first acquire after recovery above every
 *   fence granted before it (across a restart that replayed the AOF or the WAL).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Dibs } from '../../src/index.js';
import { uniqueId } from './assert.js';
import { formatVerdict, type Verdict } from './history-checker.js';
import { takeProbeLeases, whenBack, type LeaseProbes } from './lease-probes.js';
import { GuardedResource } from './guarded-resource.js';
import { runHistory } from './history-run.js';
import type { HistoryWorkerConfig } from './history-worker.js';
import { TEST_PG } from './postgres.js';

const KEYS = ['ledger', 'invoice'];
/** Records the workers write after the fault (disk freed, store restarted) before they are stopped. */
const WRITES_AFTER_FAULT = 6;
/** Bounds that only catch a hang: a worker (start-up, the fault, recovery) and the recovery itself. */
const WORKER_HANG_MS = 240_000;
const RECOVERY_HANG_MS = 120_000;
export interface LockRoundResult {
  verdict: Verdict;
  unavailable: number;
  faultLog: string;
}

/**
 * `fault(whileFull)` runs the disk fault (test/support/full-disk.ts `diskFault`) and calls
 * `whileFull` while the disk is full; it resolves to what it did.
 */
export async function lockRoundOnFullDisk(options: {
  label: string;
  store: string;
  dibs: Dibs;
  /** The workers run at least this long from their start (and always until the fault is over). */
  durationMs: number;
  fault(whileFull: () => Promise<string>): Promise<string>;
  /**
   * Whether a lock call of the fault's own felt it (e.g. one made while the store was down): a store
   * that exits and is back within moments can leave the workers' calls and the probes, all made
   * while it was up, with nothing to feel.
   */
  felt?: () => boolean;
}): Promise<LockRoundResult> {
  const { dibs, label } = options;
  const resource = new GuardedResource({ url: TEST_PG, schema: uniqueId('gdisk').toLowerCase() });
  await resource.create();
  try {
    const config: HistoryWorkerConfig = {
      store: options.store,
      resource: resource.config,
      keys: KEYS,
      rounds: 0,
      durationMs: options.durationMs,
      untilStopped: true,
      writes: 2,
      holdMs: 15,
      ttlMs: 2000,
    };
    let stop!: () => void;
    const stopped = new Promise<void>((resolve) => (stop = resolve));
    const run = runHistory(
      Array.from({ length: 3 }, () => ({ config })),
      () => resource.log(),
      WORKER_HANG_MS,
      stopped,
    );
    const t0 = performance.now();
    // taken once the workers write, right before the fault: their leases need to last only that long
    let probes: LeaseProbes | undefined;
    let writesBefore = 0;
    let writesAfter = 0;
    // the fault starts once the workers are writing (spawning takes seconds under load); they are
    // stopped once it is over and they wrote again
    const faulting = (async () => {
      try {
        for (const deadline = Date.now() + RECOVERY_HANG_MS; (writesBefore = (await resource.log()).length) < 12; ) {
          if (Date.now() > deadline)
            throw new Error(`the workers wrote ${writesBefore} records in 120 s, before any fault`);
          await sleep(50);
        }
        probes = await takeProbeLeases(dibs, 'probe');
        const log = await options.fault(() => probes!.probe());
        const over = (await resource.log()).length;
        for (const deadline = Date.now() + RECOVERY_HANG_MS; writesAfter < WRITES_AFTER_FAULT; await sleep(50)) {
          writesAfter = (await resource.log()).length - over;
          if (Date.now() > deadline) break; // judged below, once the workers ended
        }
        return log;
      } finally {
        stop();
      }
    })();
    const [{ verdict, unavailable, history }, faultLog] = await Promise.all([run, faulting]);
    const stormS = ((performance.now() - t0) / 1000).toFixed(1);
    console.log(
      `[disk] ${label} locks: ${faultLog}; lock calls retried after \`unavailable\`: ${unavailable}; workers ran ${stormS} s (${writesBefore} records before the fault, ${writesAfter} after it)`,
    );
    assert.ok(
      writesAfter >= WRITES_AFTER_FAULT,
      `the workers wrote again once the disk was freed (${writesAfter} records within 120 s)`,
    );
    console.log(formatVerdict(`${label} locks on a full disk`, verdict));
    assert.deepEqual(verdict.violations, [], 'the history on the guarded resource is valid');

    assert.ok(
      unavailable > 0 || Object.values(probes!.answers).includes('unavailable') || options.felt?.() === true,
      'the full disk was felt by the lock calls',
    );
    // an ok answer is what the store kept, once it is back
    const probeFences = await probes!.check();
    // fences only grow: per key in grant order, and past every fence granted once the store is back
    const last = new Map<string, number>();
    for (const s of [...history.sections].sort((a, b) => a.grantAt - b.grantAt)) {
      assert.ok(s.fence > (last.get(s.key) ?? 0), `${s.key}: fence ${s.fence} granted after ${last.get(s.key)}`);
      last.set(s.key, s.fence);
    }
    const before = new Map([...last, ...probeFences]);
    for (const [key, fence] of before) {
      const lease = await whenBack(() => dibs.locks.acquire(key, { ttlMs: 5000, waitMs: 10_000 }));
      assert.ok(lease.fence > fence, `${key}: fence ${lease.fence} after the disk was freed, ${fence} before`);
      await dibs.locks.release(lease);
    }
    console.log(
      `[disk] ${label} locks (checks ${((performance.now() - t0) / 1000 - Number(stormS)).toFixed(1)} s): ${verdict.sections} sections, ${verdict.writes.accepted} writes accepted, ${verdict.writes.refused} refused, ${verdict.writes.unknown} unknown; history valid; every ok answer kept, fences only grew (also past the fault)`,
    );
    return { verdict, unavailable, faultLog };
  } finally {
    await resource
      .drop()
      .catch(() => undefined)
      .then(() => resource.close());
  }
}
