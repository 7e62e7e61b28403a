/**
 * `runLoadtest`: the whole load test as one call. Sets up (or adopts) a pool, plans who clicks
 * when, runs the worker processes with live progress, reads the pool's final state and checks
 * every promise of exactly-once against what the clients were told.
 */
import { availableParallelism, loadavg } from 'node:os';
import { DibsError } from '../core/errors.js';
import { LiveTally, summariseLatency, timeline } from './measure.js';
import { resolveOptions, type ResolvedOptions } from './options.js';
import { planLoad } from './plan.js';
import { runWorkers } from './spawn.js';
import { openControlClient, type ControlClient } from './targets/target.js';
import type { LoadtestHooks, LoadtestOptions, LoadtestReport, RunViolation } from './types.js';
import { verifyRun } from './verify.js';

function runId(): string {
  return Math.random().toString(36).slice(2, 8);
}

function stamp(date: Date): string {
  return date.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15);
}

interface PreparedPool {
  pool: string;
  created: boolean;
  perClaimantLimit: number;
  supply: number;
  total: number | undefined;
  heldBefore: string[];
}

/** A fresh, uniquely named pool filled with `codes` codes — or the existing pool the user named. */
async function preparePool(control: ControlClient, o: ResolvedOptions, id: string, startedAt: Date, hooks: LoadtestHooks): Promise<PreparedPool> {
  if (o.pool !== undefined) {
    hooks.onPhase?.('setup', `using existing pool ${o.pool}`);
    const info = await control.poolInfo(o.pool);
    if (o.limit !== undefined && o.limit !== info.perClaimantLimit) {
      throw new DibsError('invalid_input', `limit: pool ${o.pool} has perClaimantLimit ${info.perClaimantLimit}; drop --limit or use a fresh pool`, { field: 'limit' });
    }
    // Codes held before the run are not this run's answers.
    const heldBefore = (await control.exportCodes(o.pool)).filter((c) => c.claimant !== null).map((c) => c.code);
    return { pool: o.pool, created: false, perClaimantLimit: info.perClaimantLimit, supply: info.stats.free, total: undefined, heldBefore };
  }
  const pool = `loadtest-${stamp(startedAt)}-${id}`;
  const perClaimantLimit = o.limit ?? 1;
  hooks.onPhase?.('setup', `creating pool ${pool} (limit ${perClaimantLimit} per claimant)`);
  await control.createPool(pool, perClaimantLimit);
  hooks.onPhase?.('import', `importing ${o.codes.toLocaleString('en-US')} codes`);
  const codes = Array.from({ length: o.codes }, (_, i) => `LT-${id}-${String(i).padStart(7, '0')}`);
  const imported = await control.importCodes(pool, codes);
  if (imported.imported !== o.codes) throw new DibsError('internal', `imported ${imported.imported} of ${o.codes} codes into ${pool}`);
  const info = await control.poolInfo(pool);
  return { pool, created: true, perClaimantLimit, supply: info.stats.free, total: o.codes, heldBefore: [] };
}

export async function runLoadtest(options: LoadtestOptions, hooks: LoadtestHooks = {}): Promise<LoadtestReport> {
  const o = resolveOptions(options);
  const startedAt = new Date();
  const id = runId();
  hooks.onPhase?.('setup', `connecting to ${o.target.kind === 'url' ? o.target.url : 'the store'}`);
  const control = await openControlClient(o.target);
  try {
    const prepared = await preparePool(control, o, id, startedAt, hooks);
    const { pool, perClaimantLimit } = prepared;
    const lanes = planLoad({
      processes: o.processes,
      claimants: o.claimants,
      claimsPerClaimant: perClaimantLimit,
      repeatRatio: o.repeatRatio,
      arrival: o.arrival,
      durationSec: o.durationSec,
      seed: o.seed,
      claimantPrefix: `lt${id}-c`,
    });
    const planned = lanes.reduce((n, lane) => n + lane.length, 0);

    hooks.onPhase?.('spawn', `starting ${o.processes} worker process${o.processes === 1 ? '' : 'es'}`);
    const tally = new LiveTally(planned);
    let ticker: NodeJS.Timeout | undefined;
    const result = await runWorkers({
      target: o.target,
      pool,
      lanes,
      concurrency: o.concurrency,
      timeoutMs: o.timeoutSec * 1000,
      onStart: () => {
        tally.markStart();
        hooks.onPhase?.('run', `${planned.toLocaleString('en-US')} requests from ${o.claimants.toLocaleString('en-US')} claimants, ${o.arrival}`);
        if (hooks.onProgress) ticker = setInterval(() => hooks.onProgress!(tally.snapshot()), hooks.progressIntervalMs ?? 250);
      },
      onOutcomes: (batch) => tally.add(batch),
    }).finally(() => clearInterval(ticker));
    hooks.onProgress?.(tally.snapshot());

    hooks.onPhase?.('verify', 'reading the final state and auditing');
    const codes = await control.exportCodes(pool);
    const { stats } = await control.poolInfo(pool);
    const audit = await control.audit(pool);
    const { outcomes } = result;
    const verification = verifyRun({
      outcomes,
      codes,
      stats,
      audit,
      expect: { codes: prepared.supply, perClaimantLimit, total: prepared.total, requests: planned, heldBefore: prepared.heldBefore },
    });
    const runFailures: RunViolation[] = result.failures.map((message) => ({ check: 'run', message }));
    const violations = [...runFailures, ...verification.violations];
    const s = verification.summary;
    const wallSeconds = outcomes.reduce((m, x) => Math.max(m, x.sent + x.ms), 0) / 1000;
    const report: LoadtestReport = {
      version: 1,
      ok: violations.length === 0,
      startedAt: startedAt.toISOString(),
      target: { kind: o.target.kind, address: control.address, backend: control.backend },
      pool,
      poolCreated: prepared.created,
      scenario: {
        mode: 'pool',
        processes: o.processes,
        claimants: o.claimants,
        claimsPerClaimant: perClaimantLimit,
        perClaimantLimit,
        codes: prepared.supply,
        arrival: o.arrival,
        durationSec: o.arrival === 'burst' ? 0 : o.durationSec,
        repeatRatio: o.repeatRatio,
        concurrency: o.concurrency,
        seed: o.seed,
      },
      environment: { node: process.version, platform: `${process.platform}-${process.arch}`, cpus: availableParallelism(), loadAverage: loadavg().map((l) => Math.round(l * 100) / 100) },
      requests: { planned, answered: outcomes.length },
      wallSeconds: Math.round(wallSeconds * 1000) / 1000,
      throughput: wallSeconds > 0 ? Math.round(outcomes.length / wallSeconds) : 0,
      latencyMs: summariseLatency(outcomes.map((x) => x.ms)),
      arrivalToAnswerMs: summariseLatency(outcomes.map((x) => Math.max(0, x.sent - x.at) + x.ms)),
      outcomes: { claimed: outcomes.filter((x) => x.status === 'claimed').length, alreadyHeld: s.alreadyHeld, replayed: s.replayed, soldOut: s.soldOut, errors: Object.fromEntries(Object.entries(s.errors).filter(([code]) => code !== 'sold_out')) },
      numbers: { demand: s.demand, supply: s.supply, expectedCodesGiven: s.expectedCodesGiven, codesGiven: s.codesGiven, winners: s.winners, losers: s.losers },
      finalStats: stats,
      audit,
      violations,
      timeline: timeline(outcomes),
    };
    hooks.onPhase?.('done', report.ok ? 'clean' : `${violations.length} violation${violations.length === 1 ? '' : 's'}`);
    return report;
  } finally {
    await control.close();
  }
}
