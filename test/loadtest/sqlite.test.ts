/**
 * `runLoadtest` end to end on SQLite (one temp file shared by 2 worker processes): the report's
 * numbers must match what the store itself says afterwards, for each arrival pattern, with a
 * per-claimant limit, and against an existing pool that already has holders.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { CodeInfo } from '../../src/index.js';
import { runLoadtest } from '../../src/loadtest/run.js';
import type { LoadtestReport, Progress } from '../../src/loadtest/types.js';
import { collect } from '../support/assert.js';
import { sqliteForSuite } from '../support/sqlite.js';

describe('loadtest on SQLite: 2 processes', () => {
  const temp = sqliteForSuite();

  /** Reads the pool independently of the load tester and compares it with the report. */
  async function assertReportMatchesStore(report: LoadtestReport): Promise<CodeInfo[]> {
    const stats = await temp.dibs.pools.stats(report.pool);
    const codes = await collect(temp.dibs.pools.exportCodes(report.pool));
    const heldByRun = codes.filter((c) => c.claimant?.startsWith('lt'));
    assert.deepEqual(await temp.dibs.pools.audit(report.pool), []);
    assert.deepEqual(report.audit, []);
    assert.deepEqual(report.finalStats, stats);
    assert.equal(report.numbers.codesGiven, heldByRun.length);
    assert.equal(report.numbers.winners, new Set(heldByRun.map((c) => c.claimant)).size);
    assert.equal(report.requests.answered, report.requests.planned);
    const answered = report.outcomes.claimed + report.outcomes.alreadyHeld + report.outcomes.soldOut + Object.values(report.outcomes.errors).reduce((a, b) => a + b, 0);
    assert.equal(answered, report.requests.answered, 'every answer is counted once');
    assert.equal(report.timeline.buckets.reduce((a, b) => a + b.answered, 0), report.requests.answered, 'the timeline covers every answer');
    return codes;
  }

  it('burst, 500 claimants vs 200 codes: clean, and the report matches the audit', async () => {
    const progress: Progress[] = [];
    const report = await runLoadtest(
      { target: { kind: 'store', store: temp.store }, processes: 2, claimants: 500, codes: 200, repeatRatio: 0.2, arrival: 'burst' },
      { onProgress: (p) => progress.push(p), progressIntervalMs: 50 },
    );
    assert.deepEqual(report.violations, []);
    assert.equal(report.ok, true);
    await assertReportMatchesStore(report);
    assert.equal(report.scenario.codes, 200);
    assert.deepEqual(report.numbers, { demand: 500, supply: 200, expectedCodesGiven: 200, codesGiven: 200, winners: 200, losers: 300 });
    assert.deepEqual(report.finalStats, { total: 200, free: 0, claimed: 200, redeemed: 0, revoked: 0 });
    assert.ok(report.outcomes.soldOut >= 300, 'every loser heard sold_out');
    assert.deepEqual(report.outcomes.errors, {});
    assert.equal(report.requests.planned, 600, '100 repeaters send a second request');
    assert.ok(report.outcomes.replayed + report.outcomes.alreadyHeld > 0, 'repeats were exercised');
    assert.ok(report.latencyMs.p50 <= report.latencyMs.p99 && report.latencyMs.p99 <= report.latencyMs.max);
    assert.ok(progress.length > 0 && progress.at(-1)!.answered === 600, 'live progress ends at every answer');
  });

  it('uniform over 1 s, limit 2: each claimant gets at most 2, exactly min(demand, supply) handed out', async () => {
    const report = await runLoadtest({ target: { kind: 'store', store: temp.store }, processes: 2, claimants: 300, codes: 400, limit: 2, repeatRatio: 0.2, arrival: 'uniform', durationSec: 1 });
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
    const report = await runLoadtest({ target: { kind: 'store', store: temp.store }, processes: 2, claimants: 200, codes: 300, arrival: 'ramp', durationSec: 1 });
    assert.deepEqual(report.violations, []);
    await assertReportMatchesStore(report);
    assert.equal(report.numbers.winners, 200);
    assert.equal(report.outcomes.soldOut, 0);
    assert.equal(report.finalStats.free, 100);
  });

  it('an existing pool with earlier holders: only this run is judged, supply is what was free', async () => {
    await temp.dibs.pools.create({ name: 'existing' });
    await temp.dibs.pools.importCodes('existing', Array.from({ length: 150 }, (_, i) => `E-${i}`));
    for (let i = 0; i < 30; i++) await temp.dibs.pools.claim('existing', `earlier-${i}`);
    const report = await runLoadtest({ target: { kind: 'store', store: temp.store }, pool: 'existing', processes: 2, claimants: 200, repeatRatio: 0.1 });
    assert.deepEqual(report.violations, []);
    assert.equal(report.poolCreated, false);
    assert.equal(report.numbers.supply, 120);
    assert.equal(report.numbers.codesGiven, 120);
    assert.equal(report.finalStats.claimed, 150);
  });

  it('bad input is refused before anything happens', async () => {
    await assert.rejects(runLoadtest({ target: { kind: 'store', store: temp.store }, processes: 0 }), { code: 'invalid_input', field: 'processes' });
    await assert.rejects(runLoadtest({ target: { kind: 'url', url: 'ftp://127.0.0.1' } }), { code: 'invalid_input' });
    await assert.rejects(runLoadtest({ target: { kind: 'store', store: temp.store }, pool: 'existing', limit: 3 }), { code: 'invalid_input', field: 'limit' });
    await assert.rejects(runLoadtest({ target: { kind: 'store', store: temp.store }, pool: 'no-such-pool' }), { code: 'not_found' });
  });
});
