/**
 * Headline: the seed scenario's p99 (bench/loadtest.ts: everyone at once, 4 processes, 10%
 * repeats, checked exactly-once by the load tester) on every store, one fresh store per round.
 */
import { runLoadtest } from '../../src/loadtest/run.js';
import { TARGETS, unavailable } from '../loadtest.js';
import { figure, loadNow, type Ratio } from '../lib/rounds.js';
import type { Sizes } from './sizes.js';

export async function seedScenario(sizes: Sizes): Promise<Ratio[]> {
  const rows: Ratio[] = [];
  const p99s = new Map<string, number[]>(TARGETS.map((t) => [t.label, []]));
  const skipped = new Set<string>();
  const load = loadNow();
  for (let r = 0; r < sizes.rounds; r++) {
    for (const target of TARGETS) {
      if (skipped.has(target.label)) continue;
      const { store, cleanup } = target.open();
      try {
        if ((await unavailable(target, store)) !== null) {
          skipped.add(target.label);
          continue;
        }
        const report = await runLoadtest({
          target: { kind: 'store', store },
          claimants: sizes.claimants,
          codes: sizes.claimants / 2,
          processes: 4,
          arrival: 'burst',
          durationSec: 30,
        });
        if (!report.ok) throw new Error(`seed scenario on ${target.label}: ${report.violations.length} violations`);
        p99s.get(target.label)!.push(report.latencyMs.p99);
      } finally {
        await cleanup().catch(() => {});
      }
    }
  }
  const during = `${load} → ${loadNow()}`;
  for (const [label, values] of p99s) {
    if (values.length)
      rows.push(
        figure(
          `seed scenario p99, ${label} (${sizes.claimants.toLocaleString('en-US')} claimants, 4 processes)`,
          '< 50 ms',
          'ms p99',
          values,
          during,
        ),
      );
  }
  return rows;
}
