/** The chart: well-formed, labelled, readable for both tame and contended latencies, and safe with odd names. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { niceTicks, renderSvg } from '../../src/loadtest/svg.js';
import type { PoolLoadtestReport, TimelineBucket } from '../../src/loadtest/types.js';

function report(buckets: TimelineBucket[], extra: Partial<PoolLoadtestReport> = {}): PoolLoadtestReport {
  return {
    version: 1,
    ok: true,
    startedAt: '2026-01-01T00:00:00.000Z',
    target: { kind: 'store', address: 'sqlite:/tmp/x.db', backend: 'sqlite' },
    pool: 'loadtest-<&>',
    poolCreated: true,
    scenario: {
      mode: 'pool',
      processes: 4,
      claimants: 100,
      claimsPerClaimant: 1,
      perClaimantLimit: 1,
      codes: 50,
      arrival: 'uniform',
      durationSec: 2,
      repeatRatio: 0.1,
      concurrency: 16,
      seed: 1,
    },
    environment: { node: 'v20', platform: 'linux-x64', cpus: 2, loadAverage: [0, 0, 0] },
    requests: { planned: 110, answered: 110 },
    wallSeconds: 2,
    throughput: 55,
    latencyMs: { p50: 1, p90: 2, p99: 3, max: 4, mean: 1.2 },
    arrivalToAnswerMs: { p50: 1, p90: 2, p99: 3, max: 4, mean: 1.2 },
    outcomes: { claimed: 50, alreadyHeld: 5, replayed: 3, soldOut: 55, errors: {} },
    numbers: { demand: 100, supply: 50, expectedCodesGiven: 50, codesGiven: 50, winners: 50, losers: 50 },
    finalStats: { total: 50, free: 0, claimed: 50, redeemed: 0, revoked: 0 },
    audit: [],
    violations: [],
    timeline: { bucketSec: 0.5, buckets },
    ...extra,
  };
}
const bucket = (t: number, p50: number, p99: number): TimelineBucket => ({
  t,
  answered: 27,
  p50,
  p99,
  claimed: 12,
  alreadyHeld: 1,
  soldOut: 14,
  errors: 0,
});

describe('loadtest SVG', () => {
  it('draws both panels with axes, labels and a legend', () => {
    const svg = renderSvg(report([bucket(0, 1, 3), bucket(0.5, 1.2, 4), bucket(1, 0.9, 2), bucket(1.5, 1, 3)]));
    assert.match(svg, /^<svg xmlns="http:\/\/www.w3.org\/2000\/svg"/);
    assert.match(svg, /<\/svg>$/);
    assert.match(svg, />latency \(ms\)</);
    assert.match(svg, />answers per 0.5 s</);
    assert.match(svg, />time since start \(s\), by send time</);
    assert.match(svg, />claimed 50</);
    assert.match(svg, />sold_out 55</);
    assert.equal((svg.match(/<polyline/g) ?? []).length, 2, 'one line for p50, one for p99');
    assert.doesNotMatch(svg, /NaN|undefined|Infinity/);
  });

  it('switches to a log latency axis when p99 is orders of magnitude above p50', () => {
    const svg = renderSvg(report([bucket(0, 0.1, 400), bucket(0.5, 0.2, 900)]));
    assert.match(svg, />latency \(ms, log scale\)</);
    assert.match(svg, />1,000</);
    assert.doesNotMatch(svg, /NaN|Infinity/);
  });

  it('escapes names and shows violations in the verdict', () => {
    const svg = renderSvg(
      report([bucket(0, 1, 2)], {
        ok: false,
        violations: [{ check: 'I1', message: 'I1: code <A> was acknowledged to u1 and to u2' }],
      }),
    );
    assert.match(svg, /pool loadtest-&lt;&amp;&gt;/);
    assert.match(svg, /✗ 1 violation: I1: code &lt;A&gt;/);
  });

  it('says so when nothing was answered', () => {
    const svg = renderSvg(report([], { requests: { planned: 10, answered: 0 } }));
    assert.match(svg, /no answers were recorded/);
    assert.doesNotMatch(svg, /NaN|Infinity/);
  });

  it('picks round ticks', () => {
    assert.deepEqual(niceTicks(9.3, 5), [0, 2, 4, 6, 8, 10]);
    assert.deepEqual(niceTicks(1200, 5), [0, 250, 500, 750, 1000, 1250]);
    assert.deepEqual(niceTicks(0.07, 4), [0, 0.02, 0.04, 0.06, 0.08]);
  });
});
