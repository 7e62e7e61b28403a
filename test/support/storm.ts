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
import type { CodeInfo, Dibs } from '../../src/index.js';
import { collect } from './assert.js';

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
  ms: number;
}

export interface WorkerConfig {
  store: string;
  storeOptions?: Record<string, unknown>;
  pool: string;
  ops: StormOp[];
  concurrency: number;
  resultFile: string;
}

export interface StormOptions {
  store: string;
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
  /** Claims in flight per process (default 8). */
  concurrency?: number;
  /** The whole storm is killed after this long (default 120 s). */
  timeoutMs?: number;
  /** Fault injection: SIGKILL this many worker processes `afterMs` into the storm. */
  kill?: { processes: number; afterMs: number };
  /** Called the moment every worker has been told to go (to time faults against the storm). */
  onStart?: () => void;
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
    const claimant = `claimant-${i}`;
    const home = i % processes;
    for (let k = 0; k < perClaimant; k++) {
      // Half the claimants use idempotency keys; retried ones always do.
      const keyed = i < retry || i % 2 === 0;
      const op: StormOp = { claimant, attempt: k, ...(keyed ? { key: `${claimant}/order-${k}` } : {}) };
      lanes[(home + k) % processes]!.push(op);
      // Retries and double clicks land on another process, so they truly race.
      if (i < retry && k === 0) lanes[(home + 1) % processes]!.push({ ...op, attempt: k });
      if (i >= retry && i < retry + repeat && k === 0) lanes[(home + 2) % processes]!.push({ claimant, attempt: perClaimant + k });
    }
  }
  return lanes.map((lane, i) => shuffle(lane, 0x9e3779b9 + i));
}

/** Runs a storm across `processes` OS processes and returns every outcome. */
export async function runClaimStorm(options: StormOptions): Promise<StormOutcome[]> {
  const lanes = planStorm(options);
  const dir = mkdtempSync(join(tmpdir(), 'dibs-storm-'));
  const timeoutMs = options.timeoutMs ?? 120_000;
  const killed = new Set<number>();
  try {
    const workers = lanes.map((ops, i) => {
      const config: WorkerConfig = {
        store: options.store,
        ...(options.storeOptions ? { storeOptions: options.storeOptions } : {}),
        pool: options.pool,
        ops,
        concurrency: options.concurrency ?? 8,
        resultFile: join(dir, `worker-${i}.json`),
      };
      const configFile = join(dir, `worker-${i}.config.json`);
      writeFileSync(configFile, JSON.stringify(config));
      const child = spawn(process.execPath, ['--import', 'tsx', WORKER, configFile], {
        cwd: ROOT,
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      const ready = new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d) => String(d).includes('ready') && resolve());
        child.once('exit', (code) => reject(new Error(`storm worker ${i} exited (${code}) before it was ready:\n${stderr}`)));
      });
      const done = new Promise<void>((resolve, reject) => {
        child.once('exit', (code, signal) => (code === 0 || killed.has(i) ? resolve() : reject(new Error(`storm worker ${i} failed (${code ?? signal}):\n${stderr}`))));
      });
      done.catch(() => {});
      ready.catch(() => {});
      return { child, ready, done, config };
    });
    const timer = setTimeout(() => workers.forEach((w) => w.child.kill('SIGKILL')), timeoutMs);
    try {
      await Promise.all(workers.map((w) => w.ready));
      for (const w of workers) w.child.stdin.end('go\n');
      options.onStart?.();
      if (options.kill) {
        const { processes, afterMs } = options.kill;
        setTimeout(() => {
          for (let i = 0; i < processes && i < workers.length; i++) {
            killed.add(i);
            workers[i]!.child.kill('SIGKILL');
          }
        }, afterMs).unref();
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
function readOutcomes(file: string): StormOutcome[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter((line) => line.endsWith('}'))
    .map((line) => JSON.parse(line) as StormOutcome);
}

export interface StormExpectations {
  /** Codes in the pool before the storm. */
  codes: number;
  perClaimantLimit: number;
  /** Error codes a fault-injection storm may see besides sold_out (e.g. `unavailable`). */
  allowedErrors?: string[];
  /**
   * With faults, a claim can commit while its answer is lost: the backend may then hold codes
   * nobody was told about, and killed processes never sent part of the demand. Without faults
   * every held code must have been acknowledged and supply must meet demand exactly.
   */
  allowUnacknowledged?: boolean;
}

export interface StormSummary {
  outcomes: number;
  winners: number;
  codesGiven: number;
  soldOut: number;
  alreadyHeld: number;
  replayed: number;
  errors: Record<string, number>;
}

/**
 * Checks a finished storm against the backend's final state:
 * I1 no code acknowledged to two claimants, I2 nobody over the limit and every retry answered
 * with the original codes, I4 counters equal the ledger, I5 every acknowledged code is still
 * held by the claimant it was given to, stock exhausted exactly when demand exceeded it, and
 * the backend's own audit is clean.
 */
export async function assertStormInvariants(dibs: Dibs, pool: string, outcomes: StormOutcome[], expect: StormExpectations): Promise<StormSummary> {
  const allowed = new Set(['sold_out', ...(expect.allowedErrors ?? [])]);
  const errors: Record<string, number> = {};
  const acknowledged = new Map<string, string>(); // code -> claimant
  const byClaimant = new Map<string, Set<string>>();
  const byKey = new Map<string, string>(); // claimant/key -> sorted codes of a claimed answer
  for (const o of outcomes) {
    if (o.status === 'error') {
      errors[o.error!] = (errors[o.error!] ?? 0) + 1;
      continue;
    }
    const codes = o.status === 'claimed' ? [o.code!] : o.held!;
    assert.ok(o.status !== 'already-held' || o.held!.includes(o.code!), `already-held answer for ${o.claimant} names a code it does not hold`);
    for (const code of codes) {
      const holder = acknowledged.get(code);
      assert.ok(holder === undefined || holder === o.claimant, `I1: code ${code} was acknowledged to ${holder} and to ${o.claimant}`);
      acknowledged.set(code, o.claimant);
      const mine = byClaimant.get(o.claimant) ?? new Set<string>();
      mine.add(code);
      byClaimant.set(o.claimant, mine);
    }
    if (o.key && o.status === 'claimed') {
      const id = `${o.claimant}\u0000${o.key}`;
      const previous = byKey.get(id);
      assert.ok(previous === undefined || previous === o.code, `I2: retry of key ${o.key} answered ${o.code}, the original answer was ${previous}`);
      byKey.set(id, o.code!);
    }
  }
  const unexpected = Object.keys(errors).filter((e) => !allowed.has(e));
  assert.deepEqual(unexpected, [], `unexpected errors: ${JSON.stringify(errors)} (first: ${JSON.stringify(outcomes.find((o) => o.status === 'error' && !allowed.has(o.error!)))})`);
  for (const [claimant, codes] of byClaimant) {
    assert.ok(codes.size <= expect.perClaimantLimit, `I2: ${claimant} was acknowledged ${codes.size} codes, limit ${expect.perClaimantLimit}`);
  }

  // The backend's view, read once in full.
  const all: CodeInfo[] = await collect(dibs.pools.exportCodes(pool, { batchSize: 5000 }));
  const held = new Map(all.filter((c) => c.claimant !== null).map((c) => [c.code, c.claimant!]));
  for (const [code, claimant] of acknowledged) {
    assert.equal(held.get(code), claimant, `I5: acknowledged code ${code} of ${claimant} is held by ${held.get(code) ?? 'nobody'} now`);
  }
  if (!expect.allowUnacknowledged) {
    for (const [code, claimant] of held) assert.equal(acknowledged.get(code), claimant, `code ${code} is held by ${claimant} but no answer said so`);
  }
  const heldPerClaimant = new Map<string, number>();
  for (const claimant of held.values()) heldPerClaimant.set(claimant, (heldPerClaimant.get(claimant) ?? 0) + 1);
  for (const [claimant, n] of heldPerClaimant) assert.ok(n <= expect.perClaimantLimit, `I2: ${claimant} holds ${n} codes`);

  // Exactly min(demand, supply) codes handed out: nothing stranded while someone heard sold_out.
  // Demand: distinct requests per claimant (a retried key is one request), capped by the limit.
  const requests = new Map<string, Set<string>>();
  for (const o of outcomes) {
    const mine = requests.get(o.claimant) ?? new Set<string>();
    mine.add(o.key ?? `click-${o.attempt}`);
    requests.set(o.claimant, mine);
  }
  let demand = 0;
  for (const wanted of requests.values()) demand += Math.min(wanted.size, expect.perClaimantLimit);
  const stats = await dibs.pools.stats(pool);
  assert.equal(stats.total, expect.codes, 'total');
  assert.equal(stats.claimed, held.size, 'I4: claimed counter equals held codes');
  assert.equal(stats.free, expect.codes - held.size, 'I4: free counter');
  if (!expect.allowUnacknowledged && !Object.keys(errors).some((e) => e !== 'sold_out')) {
    assert.equal(held.size, Math.min(demand, expect.codes), `handed out ${held.size} codes for demand ${demand} and supply ${expect.codes}`);
  }
  if (!expect.allowUnacknowledged && (errors.sold_out ?? 0) > 0) assert.equal(stats.free, 0, 'someone heard sold_out while codes were still free');
  assert.deepEqual(await dibs.pools.audit(pool), [], 'the backend audit is clean');

  return {
    outcomes: outcomes.length,
    winners: heldPerClaimant.size,
    codesGiven: held.size,
    soldOut: errors.sold_out ?? 0,
    alreadyHeld: outcomes.filter((o) => o.status === 'already-held').length,
    replayed: outcomes.filter((o) => o.replayed).length,
    errors,
  };
}
