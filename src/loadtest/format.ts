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
    [
      r.scenario.mode === 'locks' ? 'keys' : r.scenario.mode,
      `${r.pool}${r.scenario.mode === 'locks' ? '-k*' : ''}${r.poolCreated ? ' (created for this run)' : ' (existing)'}`,
    ],
    [
      'scenario',
      `${describeWorkload(r)}, ${s.arrival}${s.arrival === 'burst' ? '' : ` over ${s.durationSec} s`}, ${plural(s.processes, 'process', 'processes')} × ${s.concurrency} in flight, ${Math.round(s.repeatRatio * 100)}% repeat`,
    ],
    [
      'machine',
      `${r.environment.cpus} CPUs, ${r.environment.platform}, Node ${r.environment.node}, load average ${r.environment.loadAverage.join(' ')} (at the end); replay with --seed ${r.scenario.seed}`,
    ],
    [
      'requests',
      `${n(r.requests.planned)} planned, ${n(r.requests.answered)} answered in ${r.wallSeconds.toFixed(2)} s → ${n(r.throughput)} answers/s`,
    ],
    [
      'latency',
      `p50 ${ms(r.latencyMs.p50)} · p90 ${ms(r.latencyMs.p90)} · p99 ${ms(r.latencyMs.p99)} · max ${ms(r.latencyMs.max)}  (each call)`,
    ],
    [
      'waited',
      `p50 ${ms(r.arrivalToAnswerMs.p50)} · p90 ${ms(r.arrivalToAnswerMs.p90)} · p99 ${ms(r.arrivalToAnswerMs.p99)} · max ${ms(r.arrivalToAnswerMs.max)}  (click to answer, incl. queueing in the instance)`,
    ],
    [
      'outcomes',
      `claimed ${n(r.outcomes.claimed)} (${n(r.outcomes.replayed)} replayed) · already-held ${n(r.outcomes.alreadyHeld)} · sold_out ${n(r.outcomes.soldOut)} · errors ${n(errorCount)}${errors.length ? ` (${errors.map(([code, c]) => `${code} ${n(c)}`).join(', ')})` : ''}`,
    ],
    ['numbers', describeNumbers(r)],
    [
      'final',
      Object.entries(r.finalStats)
        .map(([k, v]) => `${k} ${n(v)}`)
        .join(' · '),
    ],
    ['audit', r.audit.length === 0 ? 'clean' : plural(r.audit.length, 'finding')],
  ];
  const width = Math.max(...lines.map(([label]) => label.length));
  const out = lines.map(([label, value]) => `${label.padEnd(width)}  ${value}`);
  if (r.ok) {
    out.push('', ...VERDICT[r.scenario.mode]);
  } else {
    out.push('', `FAILED  ${plural(r.violations.length, 'violation')}:`);
    for (const v of r.violations) out.push(`  [${v.check}] ${v.message}`);
  }
  return out.join('\n');
}

/** The workload in a few words: what was asked of what. */
export function describeWorkload(r: LoadtestReport): string {
  const s = r.scenario;
  switch (s.mode) {
    case 'pool':
      return `${plural(s.claimants, 'claimant')} × ${plural(s.claimsPerClaimant, 'claim')}, ${plural(s.codes, 'free code')}, limit ${s.perClaimantLimit}`;
    case 'sale':
      return `${plural(s.claimants, 'customer')} buying ${s.qty} each, ${plural(s.cap, 'unit')} for sale, limit ${s.perCustomerLimit}`;
    case 'locks':
      return `${plural(s.claimants, 'holder')} over ${plural(s.keys, 'key')}, ${s.holdMs} ms each`;
  }
}

function describeNumbers(r: LoadtestReport): string {
  const x = r.numbers;
  const [unit, verb] =
    r.scenario.mode === 'sale'
      ? ['unit', 'sold']
      : r.scenario.mode === 'locks'
        ? ['lease', 'granted']
        : ['code', 'handed out'];
  return `demand ${n(x.demand)}, supply ${n(x.supply)} → expected ${plural(x.expectedCodesGiven, unit)} ${verb}; ${verb} ${n(x.codesGiven)} to ${plural(x.winners, 'winner')}; ${plural(x.losers, 'claimant')} left with nothing`;
}

const VERDICT: Record<LoadtestReport['scenario']['mode'], string[]> = {
  pool: [
    'OK  exactly-once held: no code went to two claimants, nobody over the limit, retries got their original code,',
    '    counters equal the ledger, every acknowledged claim is in the store, the numbers add up, the audit is clean.',
  ],
  sale: [
    'OK  no oversell: sold ≤ cap with holds counted, nobody over the limit, retries got their original order,',
    '    every acknowledged order is counted, exactly as many units sold as demand and cap allow, the audit is clean.',
  ],
  locks: [
    'OK  mutual exclusion held: no two holders of one key overlapped, fences grew with time on every key,',
    '    every request got its turn and every lease was released.',
  ],
};

/** One status line for a live terminal display. */
export function formatProgress(p: Progress): string {
  const pct = p.planned > 0 ? Math.floor((p.answered / p.planned) * 100) : 0;
  return `${p.elapsedSec.toFixed(1).padStart(5)} s ${String(pct).padStart(3)}% ${n(p.answered)}/${n(p.planned)} · ${n(p.perSecond)}/s · p99 ${ms(p.p99Ms)} · claimed ${n(p.claimed)} · already-held ${n(p.alreadyHeld)} · sold_out ${n(p.soldOut)} · errors ${n(p.errors)}`;
}
