/** The plan of a load test: arrival shapes, repeats, and the spread over processes. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { arrivalOffset, planLoad, type PlanOptions } from '../../src/loadtest/plan.js';

const base: PlanOptions = {
  processes: 4,
  claimants: 1000,
  claimsPerClaimant: 1,
  repeatRatio: 0.1,
  arrival: 'burst',
  durationSec: 10,
  seed: 7,
  claimantPrefix: 'c',
};
const all = (o: Partial<PlanOptions> = {}) => planLoad({ ...base, ...o }).flat();

describe('loadtest plan', () => {
  it('burst: everyone at once', () => {
    assert.ok(all().every((op) => op.at === 0));
  });

  it('uniform: a constant rate over the window', () => {
    const firsts = all({ arrival: 'uniform', repeatRatio: 0 }).map((op) => op.at);
    const perSecond = Array.from(
      { length: 10 },
      (_, s) => firsts.filter((t) => t >= s * 1000 && t < (s + 1) * 1000).length,
    );
    assert.deepEqual(perSecond, Array(10).fill(100));
  });

  it('ramp: arrivals per second grow linearly', () => {
    const firsts = all({ arrival: 'ramp', repeatRatio: 0 }).map((op) => op.at);
    const perSecond = Array.from(
      { length: 10 },
      (_, s) => firsts.filter((t) => t >= s * 1000 && t < (s + 1) * 1000).length,
    );
    // Cumulative arrivals ∝ t², so second s gets ≈ (2s+1)% of them: 10, 30, 50, …, 190.
    perSecond.forEach((n, s) => assert.ok(Math.abs(n - (2 * s + 1) * 10) <= 1, `second ${s}: ${n} arrivals`));
    assert.equal(arrivalOffset('ramp', 250, 1000, 10), 5000);
  });

  it('repeatRatio: that share of claimants repeat — keyed ones retry their key, the others double-click', () => {
    const ops = all({ repeatRatio: 0.2 });
    assert.equal(ops.length, 1200);
    const byClaimant = new Map<string, typeof ops>();
    for (const op of ops) byClaimant.set(op.claimant, [...(byClaimant.get(op.claimant) ?? []), op]);
    const repeaters = [...byClaimant.values()].filter((list) => list.length === 2);
    assert.equal(repeaters.length, 200);
    const retries = repeaters.filter(([a, b]) => a!.key !== undefined && a!.key === b!.key);
    const doubleClicks = repeaters.filter(
      ([a, b]) => a!.key === undefined && b!.key === undefined && a!.attempt !== b!.attempt,
    );
    assert.equal(retries.length + doubleClicks.length, 200);
    assert.ok(
      retries.length > 50 && doubleClicks.length > 50,
      `${retries.length} retries, ${doubleClicks.length} double clicks`,
    );
  });

  it('a repeat comes from another process than the original, shortly after it', () => {
    const lanes = planLoad({ ...base, arrival: 'uniform', repeatRatio: 0.5 });
    const where = new Map<string, { lane: number; at: number }[]>();
    lanes.forEach((lane, i) =>
      lane.forEach((op) => where.set(op.claimant, [...(where.get(op.claimant) ?? []), { lane: i, at: op.at }])),
    );
    for (const list of where.values()) {
      if (list.length < 2) continue;
      assert.notEqual(list[0]!.lane, list[1]!.lane);
      const gap = Math.abs(list[0]!.at - list[1]!.at);
      assert.ok(gap >= 20 && gap <= 250, `repeat gap ${gap} ms`);
    }
  });

  it('limit > 1: each claimant asks that many times with distinct keys or attempts; lanes are balanced and time-ordered', () => {
    const lanes = planLoad({ ...base, claimsPerClaimant: 3, repeatRatio: 0, arrival: 'uniform' });
    assert.equal(lanes.flat().length, 3000);
    for (const lane of lanes) {
      assert.ok(Math.abs(lane.length - 750) <= 3);
      assert.ok(lane.every((op, i) => i === 0 || lane[i - 1]!.at <= op.at));
    }
    const c0 = lanes.flat().filter((op) => op.claimant === 'c0');
    assert.deepEqual(c0.map((op) => op.key).sort(), ['c0/order-0', 'c0/order-1', 'c0/order-2']);
  });

  it('is deterministic for a seed', () => {
    assert.deepEqual(planLoad(base), planLoad(base));
    assert.notDeepEqual(planLoad(base), planLoad({ ...base, seed: 8 }));
  });
});
