/**
 * `runLoadtest` end to end on SQLite (one temp file shared by 2 worker processes): the report's
 * numbers must match what the store itself says afterwards, for each arrival pattern, with a
 * per-claimant limit, and against an existing pool that already has holders.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CodeInfo } from '../../src/index.js';
import { runLoadtest } from '../../src/loadtest/run.js';
import type { PoolLoadtestReport, Progress } from '../../src/loadtest/types.js';
import { collect } from '../support/assert.js';
import { sqliteForSuite } from '../support/sqlite.js';

describe('loadtest on SQLite: 2 processes', () => {
  const temp = sqliteForSuite();

  /** Reads the pool independently of the load tester and compares it with the report. */
  async function assertReportMatchesStore(report: PoolLoadtestReport): Promise<CodeInfo[]> {
    const stats = await temp.dibs.pools.stats(report.pool);
    const codes = await collect(temp.dibs.pools.exportCodes(report.pool));
    const heldByRun = codes.filter((c) => c.claimant?.startsWith('lt'));
    assert.deepEqual(await temp.dibs.pools.audit(report.pool), []);
    assert.deepEqual(report.audit, []);
    assert.deepEqual(report.finalStats, stats);
    assert.equal(report.numbers.codesGiven, heldByRun.length);
    assert.equal(report.numbers.winners, new Set(heldByRun.map((c) => c.claimant)).size);
    assert.equal(report.requests.answered, report.requests.planned);
    const answered =
      report.outcomes.claimed +
      report.outcomes.alreadyHeld +
      report.outcomes.soldOut +
      Object.values(report.outcomes.errors).reduce((a, b) => a + b, 0);
    assert.equal(answered, report.requests.answered, 'every answer is counted once');
    assert.equal(
      report.timeline.buckets.reduce((a, b) => a + b.answered, 0),
      report.requests.answered,
      'the timeline covers every answer',
    );
    return codes;
  }

  it('burst, 500 claimants vs 200 codes: clean, and the report matches the audit', async () => {
    const progress: Progress[] = [];
    const report = await runLoadtest(
      {
        target: { kind: 'store', store: temp.store },
        processes: 2,
        claimants: 500,
        codes: 200,
        repeatRatio: 0.2,
        arrival: 'burst',
      },
      { onProgress: (p) => progress.push(p), progressIntervalMs: 50 },
    );
    assert.deepEqual(report.violations, []);
    assert.equal(report.ok, true);
    await assertReportMatchesStore(report);
    assert.equal(report.scenario.codes, 200);
    assert.deepEqual(report.numbers, {
      demand: 500,
      supply: 200,
      expectedCodesGiven: 200,
      codesGiven: 200,
      winners: 200,
      losers: 300,
    });
    assert.deepEqual(report.finalStats, { total: 200, free: 0, claimed: 200, redeemed: 0, revoked: 0 });
    assert.ok(report.outcomes.soldOut >= 300, 'every loser heard sold_out');
    assert.deepEqual(report.outcomes.errors, {});
    assert.equal(report.requests.planned, 600, '100 repeaters send a second request');
    assert.ok(report.outcomes.replayed + report.outcomes.alreadyHeld > 0, 'repeats were exercised');
    assert.ok(report.latencyMs.p50 <= report.latencyMs.p99 && report.latencyMs.p99 <= report.latencyMs.max);
    assert.ok(progress.length > 0 && progress.at(-1)!.answered === 600, 'live progress ends at every answer');
  });

  it('uniform over 1 s, limit 2: each claimant gets at most 2, exactly min(demand, supply) handed out', async () => {
    const report = await runLoadtest({
      target: { kind: 'store', store: temp.store },
      processes: 2,
      claimants: 300,
      codes: 400,
      limit: 2,
      repeatRatio: 0.2,
      arrival: 'uniform',
      durationSec: 1,
    });
    assert.deepEqual(report.violations, []);
    const codes = await assertReportMatchesStore(report);
    assert.equal(report.numbers.demand, 600);
    assert.equal(report.numbers.codesGiven, 400);
    const perClaimant = new Map<string, number>();
    for (const c of codes) if (c.claimant) perClaimant.set(c.claimant, (perClaimant.get(c.claimant) ?? 0) + 1);
    assert.ok([...perClaimant.values()].every((n) => n <= 2));
    assert.ok(report.wallSeconds >= 0.9, 'arrivals were spread over the window');
  });

  it('ramp over 1 s with more codes than claimants: everyone wins, nobody hears sold_out', async () => {
    const report = await runLoadtest({
      target: { kind: 'store', store: temp.store },
      processes: 2,
      claimants: 200,
      codes: 300,
      arrival: 'ramp',
      durationSec: 1,
    });
    assert.deepEqual(report.violations, []);
    await assertReportMatchesStore(report);
    assert.equal(report.numbers.winners, 200);
    assert.equal(report.outcomes.soldOut, 0);
    assert.equal(report.finalStats.free, 100);
  });

  it('an existing pool with earlier holders: only this run is judged, supply is what was free', async () => {
    await temp.dibs.pools.create({ name: 'existing' });
    await temp.dibs.pools.importCodes(
      'existing',
      Array.from({ length: 150 }, (_, i) => `E-${i}`),
    );
    for (let i = 0; i < 30; i++) await temp.dibs.pools.claim('existing', `earlier-${i}`);
    const report = await runLoadtest({
      target: { kind: 'store', store: temp.store },
      pool: 'existing',
      processes: 2,
      claimants: 200,
      repeatRatio: 0.1,
    });
    assert.deepEqual(report.violations, []);
    assert.equal(report.poolCreated, false);
    assert.equal(report.numbers.supply, 120);
    assert.equal(report.numbers.codesGiven, 120);
    assert.equal(report.finalStats.claimed, 150);
  });

  it('bad input is refused before anything happens', async () => {
    await assert.rejects(runLoadtest({ target: { kind: 'store', store: temp.store }, processes: 0 }), {
      code: 'invalid_input',
      field: 'processes',
    });
    await assert.rejects(runLoadtest({ target: { kind: 'url', url: 'ftp://127.0.0.1' } }), { code: 'invalid_input' });
    await assert.rejects(runLoadtest({ target: { kind: 'store', store: temp.store }, pool: 'existing', limit: 3 }), {
      code: 'invalid_input',
      field: 'limit',
    });
    await assert.rejects(runLoadtest({ target: { kind: 'store', store: temp.store }, pool: 'no-such-pool' }), {
      code: 'not_found',
    });
  });
});

describe('loadtest on SQLite: sale and lock modes, 2 processes', () => {
  const temp = sqliteForSuite();

  it('sale: 600 customers (20% retrying) on 150 units, 1 per customer — exactly 150 sold, the rest sold_out', async () => {
    const report = await runLoadtest({
      target: { kind: 'store', store: temp.store },
      mode: 'sale',
      processes: 2,
      claimants: 600,
      cap: 150,
      repeatRatio: 0.2,
    });
    assert.deepEqual(report.violations, []);
    const sale = await temp.dibs.sales.get(report.pool);
    assert.deepEqual(report.finalStats, { cap: 150, sold: sale.stats.sold, held: 0, available: 0 });
    assert.equal(sale.stats.sold, 150);
    assert.deepEqual(await temp.dibs.sales.audit(report.pool), []);
    assert.equal(report.numbers.winners, 150);
    assert.equal(report.numbers.losers, 450);
    assert.equal(report.requests.answered, report.requests.planned);
  });

  it('sale: 2 units per buy, limit 2, cap not a multiple of 2 — stops at the last full buy', async () => {
    const report = await runLoadtest({
      target: { kind: 'store', store: temp.store },
      mode: 'sale',
      processes: 2,
      claimants: 200,
      cap: 101,
      qty: 2,
      repeatRatio: 0,
    });
    assert.deepEqual(report.violations, []);
    assert.equal(report.finalStats.sold, 100);
    assert.equal(report.numbers.winners, 50);
  });

  it('locks: 240 holders over 4 keys — no overlap on a key, fences grow, keys ran in parallel', async () => {
    const report = await runLoadtest({
      target: { kind: 'store', store: temp.store },
      mode: 'locks',
      processes: 2,
      claimants: 240,
      keys: 4,
      holdMs: 1,
    });
    assert.deepEqual(report.violations, []);
    assert.equal(report.finalStats.acquisitions, 240);
    assert.equal(report.finalStats.overlapMs, 0);
    assert.equal(report.finalStats.liveHolders, 0);
    assert.ok(report.finalStats.crossKeyOverlaps > 0, 'different keys were held at the same time');
    // every key was used (fences are max(last + 1, the store clock in µs): they no longer count grants)
    for (let k = 0; k < 4; k++) {
      const { lastFence } = await temp.dibs.locks.inspect(`${report.pool}-k${k}`);
      assert.ok(Number.isSafeInteger(lastFence) && lastFence > 0, `key ${k}: last fence ${lastFence}`);
    }
  });

  it('refuses options of another mode', async () => {
    await assert.rejects(
      runLoadtest({ target: { kind: 'store', store: temp.store }, mode: 'sale', codes: 10 }),
      (e: Error & { code?: string }) => e.code === 'invalid_input' && /codes/.test(e.message),
    );
    await assert.rejects(
      runLoadtest({ target: { kind: 'store', store: temp.store }, mode: 'locks', cap: 10 }),
      (e: Error & { code?: string }) => e.code === 'invalid_input' && /cap/.test(e.message),
    );
  });
});
