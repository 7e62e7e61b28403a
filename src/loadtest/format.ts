/** The load-test report as text for a terminal: one labelled line per aspect, verdict last. */
import type { LoadtestReport, Progress } from './types.js';

const n = (v: number) => v.toLocaleString('en-US');
const ms = (v: number) => `${v < 10 ? v.toFixed(2) : v < 100 ? v.toFixed(1) : v.toFixed(0)} ms`;
const plural = (count: number, word: string, many = `${word}s`) => `${n(count)} ${count === 1 ? word : many}`;

export function formatReport(r: LoadtestReport): string {
  const s = r.scenario;
  const errors = Object.entries(r.outcomes.errors);
  const errorCount = errors.reduce((a, [, c]) => a + c, 0);
  const lines: [string, string][] = [
    ['target', `${r.target.backend} (${r.target.address})`],
    ['pool', `${r.pool}${r.poolCreated ? ' (created for this run)' : ' (existing)'}`],
    [
      'scenario',
      `${plural(s.claimants, 'claimant')} × ${plural(s.claimsPerClaimant, 'claim')}, ${plural(s.codes, 'free code')}, limit ${s.perClaimantLimit}, ${s.arrival}${s.arrival === 'burst' ? '' : ` over ${s.durationSec} s`}, ${plural(s.processes, 'process', 'processes')} × ${s.concurrency} in flight, ${Math.round(s.repeatRatio * 100)}% repeat`,
    ],
    ['machine', `${r.environment.cpus} CPUs, ${r.environment.platform}, Node ${r.environment.node}, load average ${r.environment.loadAverage.join(' ')} (at the end); replay with --seed ${r.scenario.seed}`],
    ['requests', `${n(r.requests.planned)} planned, ${n(r.requests.answered)} answered in ${r.wallSeconds.toFixed(2)} s → ${n(r.throughput)} answers/s`],
    ['latency', `p50 ${ms(r.latencyMs.p50)} · p90 ${ms(r.latencyMs.p90)} · p99 ${ms(r.latencyMs.p99)} · max ${ms(r.latencyMs.max)}  (each claim call)`],
    ['waited', `p50 ${ms(r.arrivalToAnswerMs.p50)} · p90 ${ms(r.arrivalToAnswerMs.p90)} · p99 ${ms(r.arrivalToAnswerMs.p99)} · max ${ms(r.arrivalToAnswerMs.max)}  (click to answer, incl. queueing in the instance)`],
    [
      'outcomes',
      `claimed ${n(r.outcomes.claimed)} (${n(r.outcomes.replayed)} replayed) · already-held ${n(r.outcomes.alreadyHeld)} · sold_out ${n(r.outcomes.soldOut)} · errors ${n(errorCount)}${errors.length ? ` (${errors.map(([code, c]) => `${code} ${n(c)}`).join(', ')})` : ''}`,
    ],
    [
      'numbers',
      `demand ${n(r.numbers.demand)}, supply ${n(r.numbers.supply)} → expected ${n(r.numbers.expectedCodesGiven)} codes handed out; handed out ${n(r.numbers.codesGiven)} to ${plural(r.numbers.winners, 'winner')}; ${plural(r.numbers.losers, 'claimant')} left with nothing`,
    ],
    ['final', `total ${n(r.finalStats.total)} · free ${n(r.finalStats.free)} · claimed ${n(r.finalStats.claimed)} · redeemed ${n(r.finalStats.redeemed)} · revoked ${n(r.finalStats.revoked)}`],
    ['audit', r.audit.length === 0 ? 'clean' : plural(r.audit.length, 'finding')],
  ];
  const width = Math.max(...lines.map(([label]) => label.length));
  const out = lines.map(([label, value]) => `${label.padEnd(width)}  ${value}`);
  if (r.ok) {
    out.push('', 'OK  exactly-once held: no code went to two claimants, nobody over the limit, retries got their original code,');
    out.push('    counters equal the ledger, every acknowledged claim is in the store, the numbers add up, the audit is clean.');
  } else {
    out.push('', `FAILED  ${plural(r.violations.length, 'violation')}:`);
    for (const v of r.violations) out.push(`  [${v.check}] ${v.message}`);
  }
  return out.join('\n');
}

/** One status line for a live terminal display. */
export function formatProgress(p: Progress): string {
  const pct = p.planned > 0 ? Math.floor((p.answered / p.planned) * 100) : 0;
  return `${p.elapsedSec.toFixed(1).padStart(5)} s ${String(pct).padStart(3)}% ${n(p.answered)}/${n(p.planned)} · ${n(p.perSecond)}/s · p99 ${ms(p.p99Ms)} · claimed ${n(p.claimed)} · already-held ${n(p.alreadyHeld)} · sold_out ${n(p.soldOut)} · errors ${n(p.errors)}`;
}
