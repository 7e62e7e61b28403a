/**
 * `runLoadtest`: the whole load test as one call. Sets up (or adopts) a pool — or a sale, or a
 * set of lock keys — plans who clicks when, runs the worker processes with live progress, reads
 * the final state and checks every promise of exactly-once against what the clients were told.
 */
import { availableParallelism, loadavg } from 'node:os';
import { DibsError } from '../core/errors.js';
import { LiveTally, summariseLatency, timeline } from './measure.js';
import { resolveOptions, type ResolvedOptions } from './options.js';
import { planLoad } from './plan.js';
import { runWorkers } from './spawn.js';
import { openControlClient, type ControlClient, type WorkMode } from './targets/target.js';
import type {
  AuditFinding,
  LoadtestHooks,
  LoadtestOptions,
  LoadtestReport,
  LockLoadtestReport,
  PlannedClaim,
  PoolLoadtestReport,
  RunViolation,
  SaleLoadtestReport,
  TimedOutcome,
} from './types.js';
import { verifyRun } from './verify.js';
import { verifyLockRun, verifySaleRun, type ModeSummary } from './verify-modes.js';

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
async function preparePool(
  control: ControlClient,
  o: ResolvedOptions,
  id: string,
  startedAt: Date,
  hooks: LoadtestHooks,
): Promise<PreparedPool> {
  if (o.pool !== undefined) {
    hooks.onPhase?.('setup', `using existing pool ${o.pool}`);
    const info = await control.poolInfo(o.pool);
    if (o.limit !== undefined && o.limit !== info.perClaimantLimit) {
      throw new DibsError(
        'invalid_input',
        `limit: pool ${o.pool} has perClaimantLimit ${info.perClaimantLimit}; drop --limit or use a fresh pool`,
        { field: 'limit' },
      );
    }
    // Codes held before the run are not this run's answers.
    const heldBefore = (await control.exportCodes(o.pool)).filter((c) => c.claimant !== null).map((c) => c.code);
    return {
      pool: o.pool,
      created: false,
      perClaimantLimit: info.perClaimantLimit,
      supply: info.stats.free,
      total: undefined,
      heldBefore,
    };
  }
  const pool = `loadtest-${stamp(startedAt)}-${id}`;
  const perClaimantLimit = o.limit ?? 1;
  hooks.onPhase?.('setup', `creating pool ${pool} (limit ${perClaimantLimit} per claimant)`);
  await control.createPool(pool, perClaimantLimit);
  hooks.onPhase?.('import', `importing ${o.codes.toLocaleString('en-US')} codes`);
  const codes = Array.from({ length: o.codes }, (_, i) => `LT-${id}-${String(i).padStart(7, '0')}`);
  const imported = await control.importCodes(pool, codes);
  if (imported.imported !== o.codes)
    throw new DibsError('internal', `imported ${imported.imported} of ${o.codes} codes into ${pool}`);
  const info = await control.poolInfo(pool);
  return { pool, created: true, perClaimantLimit, supply: info.stats.free, total: o.codes, heldBefore: [] };
}

/** What a mode contributes to a run: its workload, and how to judge the outcome. */
interface ModeRun {
  name: string;
  created: boolean;
  work: WorkMode;
  lanes: PlannedClaim[][];
  scenario: LoadtestReport['scenario'];
  verify(outcomes: TimedOutcome[]): Promise<{
    violations: RunViolation[];
    summary: ModeSummary;
    finalStats: LoadtestReport['finalStats'];
    audit: AuditFinding[];
  }>;
}

function planFor(
  o: ResolvedOptions,
  id: string,
  claimsPerClaimant: number,
  repeatRatio = o.repeatRatio,
): PlannedClaim[][] {
  return planLoad({
    processes: o.processes,
    claimants: o.claimants,
    claimsPerClaimant,
    repeatRatio,
    arrival: o.arrival,
    durationSec: o.durationSec,
    seed: o.seed,
    claimantPrefix: `lt${id}-c`,
  });
}

function scenarioBase(o: ResolvedOptions) {
  return {
    processes: o.processes,
    claimants: o.claimants,
    arrival: o.arrival,
    durationSec: o.arrival === 'burst' ? 0 : o.durationSec,
    repeatRatio: o.repeatRatio,
    concurrency: o.concurrency,
    seed: o.seed,
  };
}

const planned = (lanes: PlannedClaim[][]) => lanes.reduce((n, lane) => n + lane.length, 0);

async function poolMode(
  control: ControlClient,
  o: ResolvedOptions,
  id: string,
  startedAt: Date,
  hooks: LoadtestHooks,
): Promise<ModeRun> {
  const prepared = await preparePool(control, o, id, startedAt, hooks);
  const { pool, perClaimantLimit } = prepared;
  const lanes = planFor(o, id, perClaimantLimit);
  return {
    name: pool,
    created: prepared.created,
    work: { kind: 'pool' },
    lanes,
    scenario: {
      mode: 'pool',
      ...scenarioBase(o),
      claimsPerClaimant: perClaimantLimit,
      perClaimantLimit,
      codes: prepared.supply,
    },
    async verify(outcomes) {
      const codes = await control.exportCodes(pool);
      const { stats } = await control.poolInfo(pool);
      const audit = await control.audit(pool);
      const v = verifyRun({
        outcomes,
        codes,
        stats,
        audit,
        expect: {
          codes: prepared.supply,
          perClaimantLimit,
          total: prepared.total,
          requests: planned(lanes),
          heldBefore: prepared.heldBefore,
        },
      });
      const s = v.summary;
      const summary: ModeSummary = { ...s, given: s.codesGiven, expectedGiven: s.expectedCodesGiven };
      return { violations: v.violations, summary, finalStats: stats, audit };
    },
  };
}

function controlFor<K extends 'createSale' | 'saleInfo' | 'auditSale' | 'lockHolders'>(
  control: ControlClient,
  mode: string,
  ...methods: K[]
): Required<Pick<ControlClient, K>> {
  for (const m of methods)
    if (!control[m])
      throw new DibsError('invalid_input', `${mode} mode is not available for a ${control.backend} target`, {
        field: 'mode',
      });
  return control as unknown as Required<Pick<ControlClient, K>>;
}

async function saleMode(
  control: ControlClient,
  o: ResolvedOptions,
  id: string,
  startedAt: Date,
  hooks: LoadtestHooks,
): Promise<ModeRun> {
  const c = controlFor(control, 'sale', 'createSale', 'saleInfo', 'auditSale');
  const sale = `loadtest-${stamp(startedAt)}-${id}`;
  const perCustomerLimit = o.limit ?? o.qty;
  hooks.onPhase?.(
    'setup',
    `creating sale ${sale} (${o.cap.toLocaleString('en-US')} units, ${o.qty} per buy, limit ${perCustomerLimit} per customer)`,
  );
  await c.createSale(sale, o.cap, perCustomerLimit);
  const lanes = planFor(o, id, 1);
  return {
    name: sale,
    created: true,
    work: { kind: 'sale', qty: o.qty },
    lanes,
    scenario: { mode: 'sale', ...scenarioBase(o), cap: o.cap, qty: o.qty, perCustomerLimit },
    async verify(outcomes) {
      const finalStats = await c.saleInfo(sale);
      const audit = await c.auditSale(sale);
      const v = verifySaleRun({
        outcomes,
        final: finalStats,
        audit,
        expect: { cap: o.cap, qty: o.qty, perCustomerLimit, requests: planned(lanes) },
      });
      return { violations: v.violations, summary: v.summary, finalStats, audit };
    },
  };
}

async function lockMode(control: ControlClient, o: ResolvedOptions, id: string, startedAt: Date): Promise<ModeRun> {
  const c = controlFor(control, 'locks', 'lockHolders');
  const prefix = `loadtest-${stamp(startedAt)}-${id}`;
  const keys = Array.from({ length: o.keys }, (_, i) => `${prefix}-k${i}`);
  // Everyone wants one critical section on one key; keys are dealt round-robin so each is contended.
  let next = 0;
  const lanes = planFor(o, id, 1, 0).map((lane) =>
    lane.map((op) => ({ ...op, resource: keys[next++ % keys.length]! })),
  );
  return {
    name: prefix,
    created: true,
    work: { kind: 'locks', holdMs: o.holdMs },
    lanes,
    scenario: { mode: 'locks', ...scenarioBase(o), repeatRatio: 0, keys: o.keys, holdMs: o.holdMs },
    async verify(outcomes) {
      let liveHolders = 0;
      for (const key of keys) liveHolders += await c.lockHolders(key);
      const v = verifyLockRun({ outcomes, liveHolders, expect: { requests: planned(lanes) } });
      return { violations: v.violations, summary: v.summary, finalStats: v.final, audit: [] };
    },
  };
}

export function runLoadtest(
  options: LoadtestOptions & { mode?: 'pool' },
  hooks?: LoadtestHooks,
): Promise<PoolLoadtestReport>;
export function runLoadtest(
  options: LoadtestOptions & { mode: 'sale' },
  hooks?: LoadtestHooks,
): Promise<SaleLoadtestReport>;
export function runLoadtest(
  options: LoadtestOptions & { mode: 'locks' },
  hooks?: LoadtestHooks,
): Promise<LockLoadtestReport>;
export function runLoadtest(options: LoadtestOptions, hooks?: LoadtestHooks): Promise<LoadtestReport>;
export async function runLoadtest(options: LoadtestOptions, hooks: LoadtestHooks = {}): Promise<LoadtestReport> {
  const o = resolveOptions(options);
  const startedAt = new Date();
  const id = runId();
  hooks.onPhase?.('setup', `connecting to ${o.target.kind === 'url' ? o.target.url : 'the store'}`);
  const control = await openControlClient(o.target);
  try {
    const mode =
      o.mode === 'sale'
        ? await saleMode(control, o, id, startedAt, hooks)
        : o.mode === 'locks'
          ? await lockMode(control, o, id, startedAt)
          : await poolMode(control, o, id, startedAt, hooks);
    const requests = planned(mode.lanes);

    hooks.onPhase?.('spawn', `starting ${o.processes} worker process${o.processes === 1 ? '' : 'es'}`);
    const tally = new LiveTally(requests);
    let ticker: NodeJS.Timeout | undefined;
    const result = await runWorkers({
      target: o.target,
      mode: mode.work,
      pool: mode.name,
      lanes: mode.lanes,
      concurrency: o.concurrency,
      timeoutMs: o.timeoutSec * 1000,
      onStart: () => {
        tally.markStart();
        hooks.onPhase?.(
          'run',
          `${requests.toLocaleString('en-US')} requests from ${o.claimants.toLocaleString('en-US')} claimants, ${o.arrival}`,
        );
        if (hooks.onProgress)
          ticker = setInterval(() => hooks.onProgress!(tally.snapshot()), hooks.progressIntervalMs ?? 250);
      },
      onOutcomes: (batch) => tally.add(batch),
    }).finally(() => clearInterval(ticker));
    hooks.onProgress?.(tally.snapshot());

    hooks.onPhase?.('verify', 'reading the final state and auditing');
    const { outcomes } = result;
    const verdict = await mode.verify(outcomes);
    const runFailures: RunViolation[] = result.failures.map((message) => ({ check: 'run', message }));
    const violations = [...runFailures, ...verdict.violations];
    const s = verdict.summary;
    const wallSeconds = outcomes.reduce((m, x) => Math.max(m, x.sent + x.ms), 0) / 1000;
    const report = {
      version: 1,
      ok: violations.length === 0,
      startedAt: startedAt.toISOString(),
      target: { kind: o.target.kind, address: control.address, backend: control.backend },
      pool: mode.name,
      poolCreated: mode.created,
      scenario: mode.scenario,
      environment: {
        node: process.version,
        platform: `${process.platform}-${process.arch}`,
        cpus: availableParallelism(),
        loadAverage: loadavg().map((l) => Math.round(l * 100) / 100),
      },
      requests: { planned: requests, answered: outcomes.length },
      wallSeconds: Math.round(wallSeconds * 1000) / 1000,
      throughput: wallSeconds > 0 ? Math.round(outcomes.length / wallSeconds) : 0,
      latencyMs: summariseLatency(outcomes.map((x) => x.ms)),
      arrivalToAnswerMs: summariseLatency(outcomes.map((x) => Math.max(0, x.sent - x.at) + x.ms)),
      outcomes: {
        claimed: outcomes.filter((x) => x.status === 'claimed').length,
        alreadyHeld: s.alreadyHeld,
        replayed: s.replayed,
        soldOut: s.soldOut,
        errors: Object.fromEntries(Object.entries(s.errors).filter(([code]) => code !== 'sold_out')),
      },
      numbers: {
        demand: s.demand,
        supply: s.supply,
        expectedCodesGiven: s.expectedGiven,
        codesGiven: s.given,
        winners: s.winners,
        losers: s.losers,
      },
      finalStats: verdict.finalStats,
      audit: verdict.audit,
      violations,
      timeline: timeline(outcomes),
    } as LoadtestReport;
    hooks.onPhase?.(
      'done',
      report.ok ? 'clean' : `${violations.length} violation${violations.length === 1 ? '' : 's'}`,
    );
    return report;
  } finally {
    await control.close();
  }
}
