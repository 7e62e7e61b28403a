/**
 * Multi-process rate-limit storms against any store URL, and the checker of what the store
 * admitted. Every worker records each decision with the STORE's clock of that decision (the `at`
 * of the answer), so the admissions of all processes lie on one time line: the one the store
 * decided by. Judged only from what the clients were told (admitted / denied).
 *
 * Bounds, per algorithm (n = 1 per take):
 * - token-bucket (GCRA, interval I = period/limit, tolerance τ = burst·I):
 *   upper: admitted in any [s, e] ≤ burst + (e − s)/I;
 *   exact: replaying the admissions in store order, each one fits (max(tat, t) + I − t ≤ τ) and
 *   every denial had a full bucket (max(tat, t) + I − t > τ): not one unit withheld.
 * - sliding-window (width w = period/segments): upper: admitted in any [t − period, t] ≤ limit;
 *   margin: for every denial at t, admitted in [t − period − w, t] ≥ limit.
 * - quota: upper: admitted in each calendar period ≤ limit; margin: a period with a denial
 *   admitted exactly limit.
 */
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { distIsFresh } from '../../bench/lib/dist.js';
import type { LimitDefinition } from '../../src/index.js';

const WORKER = new URL('./limit-worker.mjs', import.meta.url).pathname;
/** Plain Node on dist/ when the build is current (a CI run builds first): no transpiler start-up per worker. */
const WORKER_ARGS = distIsFresh(fileURLToPath(new URL('../../', import.meta.url)))
  ? [WORKER, 'dist']
  : ['--import', 'tsx', WORKER, 'src'];

export interface Decision {
  l: string;
  a?: 0 | 1;
  t?: number;
  e?: string;
}

export interface LimitStormOptions {
  store: string;
  limits: string[];
  key?: string;
  processes: number;
  concurrency: number;
  durationMs: number;
  /**
   * Hang catchers, each counted from the state it waits on, never from the spawn alone: a worker
   * must say `ready` within `readyTimeoutMs` of its start (default 150 s: at load 60, without a
   * build, 6 workers under tsx took over 60 s to start), and exit within `durationMs + timeoutMs`
   * of the go (default 60 s: a Firestore take may lose to contention for its own bound of 30 s
   * before it answers). One 60 s bound from the spawn over both killed workers that were only slow.
   */
  readyTimeoutMs?: number;
  timeoutMs?: number;
}

export async function runLimitStorm(opts: LimitStormOptions): Promise<Decision[]> {
  const config = {
    store: opts.store,
    limits: opts.limits,
    key: opts.key ?? 'storm',
    durationMs: opts.durationMs,
    concurrency: opts.concurrency,
  };
  const bounds = { readyMs: opts.readyTimeoutMs ?? 150_000, runMs: opts.durationMs + (opts.timeoutMs ?? 60_000) };
  // every worker says `ready` once its store is open; then all are told to go at once
  let ready = 0;
  const workers: LimitWorker[] = [];
  const everyoneReady = () => {
    if (++ready === opts.processes) for (const worker of workers) worker.go();
  };
  for (let i = 0; i < opts.processes; i++) workers.push(startWorker(i, config, bounds, everyoneReady));
  try {
    const outs = await Promise.all(workers.map((w) => w.done));
    return outs
      .flat()
      .filter((line) => line !== 'ready')
      .map((line) => JSON.parse(line) as Decision);
  } finally {
    // one worker failed: the others would wait for a go that never comes
    for (const worker of workers) worker.kill();
  }
}

interface LimitWorker {
  go(): void;
  kill(): void;
  /** Its output lines, once it exited 0. */
  done: Promise<string[]>;
}

function startWorker(
  index: number,
  config: Record<string, unknown>,
  bounds: { readyMs: number; runMs: number },
  onReady: () => void,
): LimitWorker {
  const child = spawn(process.execPath, [...WORKER_ARGS, JSON.stringify(config)], {
    stdio: ['pipe', 'pipe', 'pipe'],
  });
  const started = performance.now();
  let wentAt: number | undefined;
  let killedFor: string | undefined;
  let timer: NodeJS.Timeout | undefined;
  const bound = (ms: number, what: string) => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      killedFor = `${what} (the storm's hang catcher killed it)`;
      child.kill('SIGKILL');
    }, ms);
  };
  bound(bounds.readyMs, `not ready ${bounds.readyMs} ms after its start`);
  let out = '';
  let err = '';
  let announced = false;
  child.stdout.on('data', (d) => {
    out += d;
    if (!announced && out.startsWith('ready\n')) {
      announced = true;
      clearTimeout(timer); // waiting for the go is bounded by the other workers' start
      onReady();
    }
  });
  child.stderr.on('data', (d) => (err += d));
  const done = new Promise<string[]>((resolve, reject) => {
    // 'close', not 'exit': the output is only whole once the pipes are
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) return resolve(out.split('\n').filter(Boolean));
      const phase =
        wentAt === undefined
          ? `${announced ? 'ready, waiting for the go' : 'starting'} after ${(performance.now() - started).toFixed(0)} ms`
          : `${(performance.now() - wentAt).toFixed(0)} ms after the go`;
      reject(new Error(`limit worker ${index} exited ${code ?? signal}, ${killedFor ?? phase}: ${err}`));
    });
  });
  return {
    go() {
      wentAt = performance.now();
      bound(bounds.runMs, `still running ${bounds.runMs} ms after the go`);
      child.stdin.end('go\n');
    },
    kill() {
      clearTimeout(timer);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    },
    done,
  };
}

export interface StormSummary {
  admitted: number;
  denied: number;
  unavailable: number;
  spanMs: number;
  allowedBySpan: number;
}

/** Throws (assert) on any admission over the limit, or any denial the limit did not require. */
export function assertLimitHonoured(def: LimitDefinition, decisions: Decision[]): StormSummary {
  const mine = decisions.filter((d) => d.l === def.name);
  const admitted = mine
    .filter((d) => d.a === 1)
    .map((d) => d.t!)
    .sort((a, b) => a - b);
  const denied = mine
    .filter((d) => d.a === 0)
    .map((d) => d.t!)
    .sort((a, b) => a - b);
  const unavailable = mine.filter((d) => d.e).length;
  assert.ok(admitted.length > 0, `${def.name}: nothing admitted`);
  assert.ok(
    denied.length > 0,
    `${def.name}: nothing denied — the demand never exceeded the limit, the storm proves nothing`,
  );
  const spanMs = Math.max(admitted.at(-1)!, denied.at(-1)!) - Math.min(admitted[0]!, denied[0]!);
  const eps = 1e-6;
  let allowedBySpan: number;
  if (def.algorithm === 'token-bucket') {
    const I = def.periodMs / def.limit;
    const tol = def.burst * I;
    allowedBySpan = def.burst + spanMs / I;
    for (let i = 0; i < admitted.length; i++) {
      for (let j = i; j < admitted.length; j++) {
        const most = def.burst + (admitted[j]! - admitted[i]!) / I;
        assert.ok(
          j - i + 1 <= most + eps,
          `${def.name}: ${j - i + 1} admitted in [${admitted[i]}, ${admitted[j]}] (${(admitted[j]! - admitted[i]!).toFixed(3)} ms) > burst + span/interval = ${most.toFixed(3)}`,
        );
      }
    }
    // replay: tat at every decision, from the admissions before it on the store's time line
    let tat = -Infinity;
    let k = 0;
    const tatAt = (t: number) => {
      while (k < admitted.length && admitted[k]! <= t) {
        const a = admitted[k++]!;
        const next = Math.max(tat, a) + I;
        assert.ok(
          next - a <= tol + 1e-3,
          `${def.name}: admission at ${a} did not fit: tat would be ${(next - a).toFixed(3)} ms ahead > tolerance ${tol}`,
        );
        tat = next;
      }
      return tat;
    };
    for (const t of denied) {
      const ahead = Math.max(tatAt(t), t) + I - t;
      assert.ok(
        ahead > tol - 1e-3,
        `${def.name}: denied at ${t} with room: tat ${(ahead - I).toFixed(3)} ms ahead, a unit fits within tolerance ${tol}`,
      );
    }
    tatAt(Infinity);
  } else if (def.algorithm === 'sliding-window') {
    const w = def.periodMs / def.segments;
    allowedBySpan = (def.limit * spanMs) / def.periodMs;
    let lo = 0;
    for (let j = 0; j < admitted.length; j++) {
      while (admitted[lo]! < admitted[j]! - def.periodMs) lo++;
      assert.ok(
        j - lo + 1 <= def.limit,
        `${def.name}: ${j - lo + 1} admitted in the window [${admitted[j]! - def.periodMs}, ${admitted[j]}] > limit ${def.limit}`,
      );
    }
    for (const t of denied) {
      const inWindow = countIn(admitted, t - def.periodMs - w, t);
      assert.ok(
        inWindow >= def.limit,
        `${def.name}: denied at ${t} with only ${inWindow} admitted in the ${def.periodMs + w} ms before (limit ${def.limit})`,
      );
    }
  } else {
    allowedBySpan = (def.limit * spanMs) / def.periodMs;
    const per = new Map<number, number>();
    for (const t of admitted) per.set(Math.floor(t / def.periodMs), (per.get(Math.floor(t / def.periodMs)) ?? 0) + 1);
    for (const [p, n] of per)
      assert.ok(n <= def.limit, `${def.name}: ${n} admitted in period ${p} > limit ${def.limit}`);
    for (const t of denied) {
      const n = per.get(Math.floor(t / def.periodMs)) ?? 0;
      assert.ok(n >= def.limit, `${def.name}: denied at ${t} while its period admitted only ${n} of ${def.limit}`);
    }
  }
  return { admitted: admitted.length, denied: denied.length, unavailable, spanMs, allowedBySpan };
}

/** Admissions with time in [from, to] (sorted input). */
function countIn(sorted: number[], from: number, to: number): number {
  let n = 0;
  for (const t of sorted) if (t >= from && t <= to) n++;
  return n;
}

/** The three limits a storm runs at once, sized so a few processes always ask for more. */
export function stormLimits(
  prefix: string,
  scale = 0.5,
): {
  name: string;
  algorithm: LimitDefinition['algorithm'];
  limit: number;
  periodMs: number;
  burst?: number;
  segments?: number;
}[] {
  return [
    {
      name: `${prefix}-tb`,
      algorithm: 'token-bucket',
      limit: Math.max(2, Math.round(40 * scale)),
      periodMs: 1000,
      burst: Math.max(1, Math.round(8 * scale)),
    },
    {
      name: `${prefix}-sw`,
      algorithm: 'sliding-window',
      limit: Math.max(2, Math.round(30 * scale)),
      periodMs: 1000,
      segments: 10,
    },
    { name: `${prefix}-q`, algorithm: 'quota', limit: Math.max(2, Math.round(15 * scale)), periodMs: 500 },
  ];
}

/**
 * Creates the three storm limits through `dibs`, runs `processes` workers against `store`, and
 * checks every limit. Returns one summary per limit (for the test's log).
 */
export async function assertLimitStorm(
  dibs: import('../../src/index.js').Dibs,
  store: string,
  opts: { prefix: string; processes?: number; concurrency?: number; durationMs?: number; scale?: number },
): Promise<Record<string, StormSummary>> {
  const defs = [];
  for (const input of stormLimits(opts.prefix, opts.scale)) defs.push(await dibs.limits.create(input));
  const decisions = await runLimitStorm({
    store,
    limits: defs.map((d) => d.name),
    processes: opts.processes ?? 3,
    concurrency: opts.concurrency ?? 3,
    durationMs: opts.durationMs ?? 1500,
  });
  return Object.fromEntries(defs.map((def) => [def.algorithm, assertLimitHonoured(def, decisions)]));
}
