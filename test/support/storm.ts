/**
 * Multi-process claim storms and the invariant audit that follows them. Backend-agnostic: a
 * backend's test passes only a store URL that isolates it (file, schema, key prefix).
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { isDibsError, type Dibs } from '../../src/index.js';
import type { RunViolation } from '../../src/loadtest/types.js';
import { verifyPool, type VerifyExpectations, type VerifySummary } from '../../src/loadtest/verify.js';
import { workerArgs } from './node-worker.js';

export interface StormOp {
  claimant: string;
  /** Idempotency key; the same key sent twice is a network retry. */
  key?: string;
  /** Which attempt of this claimant this is (0 = first). */
  attempt: number;
}

export interface StormOutcome extends StormOp {
  status: 'claimed' | 'already-held' | 'error';
  code?: string;
  held?: string[];
  replayed?: boolean;
  error?: string;
  /** `unavailable` answers retried before this one (with `retryUnavailable`). */
  retries?: number;
  ms: number;
  /** Wall-clock (Date.now(), one clock for every process here) when the call began and was answered. */
  startedAt?: number;
  endedAt?: number;
}

export interface WorkerConfig {
  store: string;
  /** Wait this long before each claim (paces a storm so a fault lands in the middle of it). */
  paceMs?: number;
  storeOptions?: Record<string, unknown>;
  pool: string;
  ops: StormOp[];
  concurrency: number;
  resultFile: string;
  retryUnavailable?: number;
}

export interface StormOptions {
  store: string;
  /** Wait this long before each claim, in each of a process' lanes (default 0). */
  paceMs?: number;
  storeOptions?: Record<string, unknown>;
  pool: string;
  processes: number;
  claimants: number;
  /** Fraction of claimants that click twice without a key (default 0.1). */
  repeatRatio?: number;
  /** Fraction of claimants whose keyed claim is sent twice, as a client retry (default 0.1). */
  retryRatio?: number;
  /** Distinct keyed claims each claimant makes (for perClaimantLimit > 1; default 1). */
  claimsPerClaimant?: number;
  /** Claimant names are `${prefix}-${i}` (default 'claimant'): storms in waves on one pool need distinct ones. */
  claimantPrefix?: string;
  /** Claims in flight per process (default 8). */
  concurrency?: number;
  /**
   * Retry a claim answered `unavailable` (retriable: nothing of it committed, or an ambiguous commit)
   * up to this many times after its Retry-After, with the same key, as the contract tells a client
   * to; the outcome is the last answer. Default 0: a storm that expects no `unavailable` sees each.
   */
  retryUnavailable?: number;
  /** The whole storm is killed after this long (default 120 s). */
  timeoutMs?: number;
  /**
   * Fault injection: SIGKILL the first `processes` worker processes `afterMs` into the storm, or once
   * each of them has answered `afterAnswers` claims (on a loaded machine a timer can fire before a
   * worker has answered anything, and then nothing it acknowledged is put to the test).
   */
  kill?: { processes: number; afterMs?: number; afterAnswers?: number };
  /** Called once every worker is ready, right before they are told to go: a fault set here is on before the first claim. */
  onStart?: () => void;
  /**
   * Called once the workers together have answered `answers` claims: a fault timed by the storm's
   * progress lands mid-storm on a loaded machine too, where a timer from the go may fire before
   * the first answer (or after the last).
   */
  onAnswered?: { answers: number; run: () => void };
  /** Per worker: the store URL it uses (default `store`; e.g. some through Sentinel, some straight to one node) and an argv prefix that runs it on another host (`ip netns exec NS`). */
  storeFor?: (worker: number) => string;
  spawnPrefix?: (worker: number) => string[];
}

const WORKER = fileURLToPath(new URL('./claim-worker.ts', import.meta.url));
const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Deterministic shuffle (seeded), so a failing storm can be reasoned about. */
function shuffle<T>(items: T[], seed: number): T[] {
  let state = seed >>> 0 || 1;
  for (let i = items.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    const j = state % (i + 1);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}

/** Builds the operations: every claimant claims; some double-click, some retry a keyed claim. */
export function planStorm(options: StormOptions): StormOp[][] {
  const { claimants, processes } = options;
  const repeat = Math.round(claimants * (options.repeatRatio ?? 0.1));
  const retry = Math.round(claimants * (options.retryRatio ?? 0.1));
  const perClaimant = options.claimsPerClaimant ?? 1;
  const lanes: StormOp[][] = Array.from({ length: processes }, () => []);
  for (let i = 0; i < claimants; i++) {
    const claimant = `${options.claimantPrefix ?? 'claimant'}-${i}`;
    const home = i % processes;
    for (let k = 0; k < perClaimant; k++) {
      // Half the claimants use idempotency keys; retried ones always do.
      const keyed = i < retry || i % 2 === 0;
      const op: StormOp = { claimant, attempt: k, ...(keyed ? { key: `${claimant}/order-${k}` } : {}) };
      lanes[(home + k) % processes]!.push(op);
      // Retries and double clicks land on another process, so they truly race.
      if (i < retry && k === 0) lanes[(home + 1) % processes]!.push({ ...op, attempt: k });
      if (i >= retry && i < retry + repeat && k === 0)
        lanes[(home + 2) % processes]!.push({ claimant, attempt: perClaimant + k });
    }
  }
  return lanes.map((lane, i) => shuffle(lane, 0x9e3779b9 + i));
}

/** Runs a storm across `processes` OS processes and returns every outcome. */
export async function runClaimStorm(options: StormOptions): Promise<StormOutcome[]> {
  const lanes = planStorm(options);
  const dir = mkdtempSync(join(tmpdir(), 'dibs-storm-'));
  // A bound for a hung worker, not a speed check: a loaded 2-core machine runs the slowest storms (single
  // statements under connection kills) for well over a minute.
  const timeoutMs = options.timeoutMs ?? 300_000;
  const killed = new Set<number>();
  try {
    const workers = lanes.map((ops, i) => {
      const config: WorkerConfig = {
        store: options.storeFor?.(i) ?? options.store,
        ...(options.paceMs ? { paceMs: options.paceMs } : {}),
        ...(options.storeOptions ? { storeOptions: options.storeOptions } : {}),
        pool: options.pool,
        ops,
        concurrency: options.concurrency ?? 8,
        resultFile: join(dir, `worker-${i}.json`),
        ...(options.retryUnavailable ? { retryUnavailable: options.retryUnavailable } : {}),
      };
      const configFile = join(dir, `worker-${i}.config.json`);
      writeFileSync(configFile, JSON.stringify(config));
      const argv = [...(options.spawnPrefix?.(i) ?? []), process.execPath, ...workerArgs(WORKER), configFile];
      const child = spawn(argv[0]!, argv.slice(1), {
        cwd: ROOT,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      const ready = new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d) => String(d).includes('ready') && resolve());
        child.once('exit', (code) =>
          reject(new Error(`storm worker ${i} exited (${code}) before it was ready:\n${stderr}`)),
        );
      });
      const done = new Promise<void>((resolve, reject) => {
        child.once('exit', (code, signal) =>
          code === 0 || killed.has(i)
            ? resolve()
            : reject(new Error(`storm worker ${i} failed (${code ?? signal}):\n${stderr}`)),
        );
      });
      done.catch(() => {});
      ready.catch(() => {});
      return { child, ready, done, config };
    });
    const timer = setTimeout(() => workers.forEach((w) => w.child.kill('SIGKILL')), timeoutMs);
    try {
      await Promise.all(workers.map((w) => w.ready));
      // before `go`: a fault set here is on before the first claim (a fast store answers hundreds of
      // claims in the time it takes to set one up)
      options.onStart?.();
      for (const w of workers) w.child.stdin.end('go\n');
      if (options.onAnswered) {
        const { answers, run } = options.onAnswered;
        const poll = () => {
          const answered = workers.reduce((n, w) => n + answeredSoFar(w.config.resultFile), 0);
          if (answered >= answers || workers.every((w) => w.child.exitCode !== null)) run();
          else setTimeout(poll, 10).unref();
        };
        poll();
      }
      if (options.kill) {
        const { processes, afterMs = 0, afterAnswers = 0 } = options.kill;
        const targets = workers.slice(0, processes);
        const kill = () => {
          // each target once it has answered enough (a worker that ended before is not killed)
          let waiting = false;
          targets.forEach((w, i) => {
            if (killed.has(i) || w.child.exitCode !== null) return;
            if (afterAnswers > 0 && answeredSoFar(w.config.resultFile) < afterAnswers) waiting = true;
            else {
              killed.add(i);
              w.child.kill('SIGKILL');
            }
          });
          if (waiting) setTimeout(kill, 10).unref();
        };
        setTimeout(kill, afterMs).unref();
      }
      await Promise.all(workers.map((w) => w.done));
    } finally {
      clearTimeout(timer);
      for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    }
    return workers.flatMap((w) => readOutcomes(w.config.resultFile));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The JSON lines a worker appended; a torn last line (killed mid-write) is not an answer. */
function answerLines(file: string): string[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.endsWith('}'));
}

/** How many answers a worker has given so far: the fault timers poll this every 10 ms, so no parsing. */
function answeredSoFar(file: string): number {
  return answerLines(file).length;
}

function readOutcomes(file: string): StormOutcome[] {
  return answerLines(file).map((line) => JSON.parse(line) as StormOutcome);
}

export type StormExpectations = Omit<VerifyExpectations, 'total'>;
export type StormSummary = VerifySummary;

/**
 * Checks a finished storm against the store's final state with the product's own verifier
 * (src/loadtest/verify.ts, the same checks `dibs loadtest` runs): I1 no code acknowledged to two
 * claimants, I2 nobody over the limit and every retry answered with the original codes, I4
 * counters equal the ledger, I5 every acknowledged code still held by its claimant, stock
 * exhausted exactly when demand exceeded it, and the store's own audit clean.
 */
export async function assertStormInvariants(
  dibs: Dibs,
  pool: string,
  outcomes: StormOutcome[],
  expect: StormExpectations,
): Promise<StormSummary> {
  const { violations, summary } = await verifyPool(dibs, pool, outcomes, { ...expect, total: expect.codes });
  assert.deepEqual(violations, [], violations.map((v) => v.message).join('\n'));
  return summary;
}

/** A code acknowledged to a claimant that the store no longer has it for: a lost answer (I5). */
export const isLostAcknowledgedCode = (v: RunViolation) =>
  v.check === 'I5' && v.message.startsWith('I5: acknowledged code');

/**
 * One claim of a test's own, recorded like a storm's answer: a probe that puts a case to the test
 * when the storm may not have (e.g. a write acknowledged while a fault is in place).
 */
export async function probeClaim(dibs: Dibs, pool: string, claimant: string): Promise<StormOutcome> {
  const startedAt = Date.now();
  const started = performance.now();
  let outcome: Pick<StormOutcome, 'status' | 'code' | 'held' | 'error'>;
  try {
    const result = await dibs.pools.claim(pool, claimant);
    outcome = { status: result.status, code: result.code, held: result.held };
  } catch (error) {
    outcome = { status: 'error', error: isDibsError(error) ? error.code : String(error) };
  }
  return { claimant, attempt: 0, ...outcome, ms: performance.now() - started, startedAt, endedAt: Date.now() };
}
