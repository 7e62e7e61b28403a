/**
 * The service's hot-path metrics (CellCounter, CellHistogram in src/service/metrics.ts) count
 * outside prom-client's own metric classes: fed the same observations, they must write exactly
 * the text prom-client's Counter and Histogram write (buckets on their bounds, +Inf, sum, count,
 * label order, a worker's default label) and give the same JSON.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { Counter, Histogram, Registry } from 'prom-client';
import { CellCounter, CellHistogram } from '../../src/service/metrics.js';

const BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Values on the bounds, between them, below the first and above the last. */
const VALUES = [0, 0.0001, 0.001, 0.0011, 0.0025, 0.003, 0.01, 0.3, 0.5, 7, 10, 11, 1e6];

function pair(defaultLabels?: Record<string, string>) {
  const theirs = new Registry();
  const ours = new Registry();
  if (defaultLabels) for (const r of [theirs, ours]) r.setDefaultLabels(defaultLabels);
  const labelNames = ['method', 'route', 'status'] as const;
  return {
    theirs,
    ours,
    histograms: [
      new Histogram({ name: 'h_seconds', help: 'latency', labelNames, buckets: BUCKETS, registers: [theirs] }),
      new CellHistogram({ name: 'h_seconds', help: 'latency', labelNames, buckets: BUCKETS, registers: [ours] }),
    ] as const,
    counters: [
      new Counter({ name: 'c_total', help: 'outcomes', labelNames: ['kind', 'outcome'], registers: [theirs] }),
      new CellCounter({ name: 'c_total', help: 'outcomes', labelNames: ['kind', 'outcome'], registers: [ours] }),
    ] as const,
  };
}

const withoutExemplars = (metrics: unknown) =>
  JSON.parse(JSON.stringify(metrics, (key, value: unknown) => (key === 'exemplar' ? undefined : value))) as unknown;

describe('cell metrics', () => {
  for (const defaultLabels of [undefined, { worker: '2' }]) {
    it(`write what prom-client writes for the same observations${defaultLabels ? ' (with a default label)' : ''}`, async () => {
      const { theirs, ours, histograms, counters } = pair(defaultLabels);
      const [promHistogram, cellHistogram] = histograms;
      const [promCounter, cellCounter] = counters;
      const series = [
        ['POST', '/v1/pools/:pool/claims', '201'],
        ['GET', '/v1/pools/:pool', '404'],
      ] as const;
      for (const [i, [method, route, status]] of series.entries()) {
        for (const value of VALUES.slice(i * 3)) {
          promHistogram.observe({ method, route, status }, value);
          cellHistogram.cell(method, route, status).observe(value);
        }
      }
      for (const [kind, outcome, times] of [
        ['pool', 'claimed', 3],
        ['pool', 'sold_out', 1],
        ['sale', 'claimed', 2],
      ] as const) {
        for (let i = 0; i < times; i++) {
          promCounter.inc({ kind, outcome });
          cellCounter.inc(kind, outcome);
        }
      }
      assert.equal(await ours.metrics(), await theirs.metrics());
      assert.deepEqual(
        withoutExemplars(await ours.getMetricsAsJSON()),
        withoutExemplars(await theirs.getMetricsAsJSON()),
      );
    });
  }

  it('start empty, refuse a wrong number of label values and a value that is not a number', async () => {
    const { ours, histograms, counters } = pair();
    assert.equal(
      await ours.metrics(),
      '# HELP h_seconds latency\n# TYPE h_seconds histogram\n\n# HELP c_total outcomes\n# TYPE c_total counter\n',
    );
    assert.throws(() => histograms[1].cell('POST', '/x'), /3 label values expected, got 2/);
    assert.throws(() => counters[1].inc('pool'), /2 label values expected, got 1/);
    assert.throws(() => histograms[1].cell('POST', '/x', '200').observe(Number.NaN), /not a valid number/);
  });
});
