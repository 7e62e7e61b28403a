/**
 * The seed scenario on PostgreSQL only (as bench/headlines/seed.ts: everyone at once, 4 processes,
 * checked exactly-once by the load tester), for A/B of store URL parameters: each variant's p99 in
 * rounds taken turn about (variant 1, variant 2, variant 1, …), one fresh schema per run.
 *
 *   node --import tsx bench/postgres-seed-params.ts
 * env: SEED_VARIANTS  store URL parameters of each variant, variants separated by `,`
 *                     (default `,groupMax=8`: the defaults, and groups of at most 8; an empty variant is the defaults)
 *      SEED_ROUNDS (5), SEED_CLAIMANTS (10000; codes are half of it)
 */
import { runLoadtest } from '../src/loadtest/run.js';
import { TARGETS } from './loadtest.js';
import { loadNow, spread } from './lib/rounds.js';

const VARIANTS = (process.env.SEED_VARIANTS ?? ',groupMax=8').split(',');
const ROUNDS = Number(process.env.SEED_ROUNDS ?? 5);
const CLAIMANTS = Number(process.env.SEED_CLAIMANTS ?? 10_000);
const target = TARGETS.find((t) => t.label === 'postgres')!;

const p99s = new Map<string, number[]>(VARIANTS.map((v) => [v, []]));
const load = loadNow();
for (let r = 0; r < ROUNDS; r++) {
  for (const variant of VARIANTS) {
    const { store, cleanup } = target.open();
    const url = new URL(store);
    for (const [k, v] of new URLSearchParams(variant)) url.searchParams.set(k, v);
    try {
      const report = await runLoadtest({
        target: { kind: 'store', store: url.href },
        claimants: CLAIMANTS,
        codes: CLAIMANTS / 2,
        processes: 4,
        arrival: 'burst',
        durationSec: 30,
      });
      if (!report.ok) throw new Error(`seed scenario with ${variant}: ${report.violations.length} violations`);
      p99s.get(variant)!.push(report.latencyMs.p99);
      console.log(`round ${r + 1} ${variant || '(defaults)'}: p99 ${report.latencyMs.p99.toFixed(1)} ms`);
    } finally {
      await cleanup().catch(() => {});
    }
  }
}
console.log(`\nload ${load} → ${loadNow()}`);
for (const [variant, values] of p99s) {
  const s = spread(values);
  console.log(
    `${variant || '(defaults)'}: p99 ${s.median.toFixed(1)} (${s.min.toFixed(1)}–${s.max.toFixed(1)}) ms over ${values.length} rounds`,
  );
}
