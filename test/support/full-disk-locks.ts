/**
 * A lock round on a full disk (test/hostile/full-disk-locks.test.ts): 3 history worker processes
 * take two keys with runExclusive and write through the fenced PostgreSQL resource (on the shared
 * server, never on the full disk) while the test fills the store's disk, keeps it full, frees it
 * and restarts a store that stopped (the fault starts once the workers are writing). Meanwhile this process probes acquire, renew and release once
 * while the disk is full.
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
import { takeProbeLeases, whenBack } from './lease-probes.js';
import { GuardedResource } from './guarded-resource.js';
import { runHistory } from './history-run.js';
import type { HistoryWorkerConfig } from './history-worker.js';
import { TEST_PG } from './postgres.js';

const KEYS = ['ledger', 'invoice'];
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
  durationMs: number;
  fault(whileFull: () => Promise<string>): Promise<string>;
}): Promise<LockRoundResult> {
  const { dibs, label } = options;
  const resource = new GuardedResource({ url: TEST_PG, schema: uniqueId('gdisk').toLowerCase() });
  await resource.create();
  try {
    const probes = await takeProbeLeases(dibs, 'probe');
    const config: HistoryWorkerConfig = {
      store: options.store,
      resource: resource.config,
      keys: KEYS,
      rounds: 0,
      durationMs: options.durationMs,
      writes: 2,
      holdMs: 15,
      ttlMs: 2000,
    };
    let faulting: Promise<string> = Promise.resolve('');
    const run = runHistory(
      Array.from({ length: 3 }, () => ({ config })),
      () => resource.log(),
      options.durationMs + 90_000,
    );
    // the fault starts once every worker is past its start-up (spawning takes seconds under load)
    faulting = (async () => {
      const deadline = Date.now() + 60_000;
      while ((await resource.log()).length < 12 && Date.now() < deadline) await sleep(50);
      return options.fault(() => probes.probe());
    })();
    const t0 = performance.now();
    const [{ verdict, unavailable, history }, faultLog] = await Promise.all([run, faulting]);
    const stormS = ((performance.now() - t0) / 1000).toFixed(1);
    console.log(
      `[disk] ${label} locks: ${faultLog}; lock calls retried after \`unavailable\`: ${unavailable}; workers ran ${stormS} s`,
    );
    console.log(formatVerdict(`${label} locks on a full disk`, verdict));
    assert.deepEqual(verdict.violations, [], 'the history on the guarded resource is valid');

    assert.ok(
      unavailable > 0 || Object.values(probes.answers).includes('unavailable'),
      'the full disk was felt by the lock calls',
    );
    // an ok answer is what the store kept, once it is back
    const probeFences = await probes.check();
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
