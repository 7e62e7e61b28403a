/**
 * Admin changes racing live traffic (invariant I8): workers in separate OS processes claim, buy and
 * reserve on a schedule while this process changes the rules. Every request and every admin change
 * is stamped with CLOCK_MONOTONIC (process.hrtime, shared by all processes of the machine) when it
 * was sent (t0) and when its answer came back (t1).
 *
 * The checkers judge each acknowledged answer against the rule versions that could have been in
 * force while it ran: version i (the rules after the i-th accepted change) is a candidate for a
 * request [t0, t1] unless it surely took effect after the request's answer (change i sent after t1)
 * or was surely replaced before the request was sent (change i+1 acknowledged before t0). "Each step
 * is judged wholly by the old rules or wholly by the new ones" then reads: some ONE candidate
 * version explains the whole answer (window, existence, limit together).
 */
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { workerArgs } from './node-worker.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** Microseconds on CLOCK_MONOTONIC: comparable across the processes of one machine. */
export const monoUs = (): number => Number(process.hrtime.bigint() / 1000n);

/** When a request was sent and when its answer arrived (monoUs). */
export interface Timed {
  t0: number;
  t1: number;
}

/** One admin change as this process saw it: `rules` is what it sets when accepted. */
export interface AdminChange<R> extends Timed {
  label: string;
  accepted: boolean;
  rules: Partial<R>;
  /** The refusal's error code (e.g. `conflict` for a limit below what a claimant holds). */
  refused?: string;
}

/** Runs `fn` as one admin change, timed; an error whose code is in `refusals` is a refusal, any other is thrown. */
export async function adminChange<R>(
  changes: AdminChange<R>[],
  label: string,
  rules: Partial<R>,
  fn: () => Promise<unknown>,
  refusals: string[] = [],
): Promise<boolean> {
  const t0 = monoUs();
  try {
    await fn();
    changes.push({ label, accepted: true, rules, t0, t1: monoUs() });
    return true;
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === undefined || !refusals.includes(code)) throw error;
    changes.push({ label, accepted: false, rules, refused: code, t0, t1: monoUs() });
    return false;
  }
}

/** The rule versions: the initial rules, then one per accepted change (in acknowledgement order). */
export function versions<R>(
  initial: R,
  changes: AdminChange<R>[],
): { rules: R; from: Timed | null; until: Timed | null }[] {
  const accepted = changes.filter((c) => c.accepted).sort((a, b) => a.t1 - b.t1);
  const out: { rules: R; from: Timed | null; until: Timed | null }[] = [{ rules: initial, from: null, until: null }];
  for (const change of accepted) {
    const prev = out[out.length - 1]!;
    prev.until = change;
    out.push({ rules: { ...prev.rules, ...change.rules }, from: change, until: null });
  }
  return out;
}

/** The versions that may have judged a request sent at t0 and answered at t1. */
export function candidates<R>(all: ReturnType<typeof versions<R>>, at: Timed): R[] {
  return all
    .filter((v) => (v.from === null || v.from.t0 <= at.t1) && (v.until === null || v.until.t1 >= at.t0))
    .map((v) => v.rules);
}

export interface WorkerRun<O> {
  /** One list of ops per OS process. */
  lanes: unknown[][];
  worker: string;
  /** Everything else a worker needs (store URL, pool or sale, …). */
  config: Record<string, unknown>;
  concurrency: number;
  timeoutMs: number;
  /** Runs in this process while the workers work; `done()` turns true when they have all exited. */
  during: (done: () => boolean) => Promise<void>;
  /** Typing only. */
  outcome?: O;
}

/** Spawns one worker per lane, starts them together, runs `during`, and returns every answer they recorded. */
export async function runWorkers<O>(run: WorkerRun<O>): Promise<O[]> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-admin-storm-'));
  try {
    const workers = run.lanes.map((ops, i) => {
      const resultFile = join(dir, `w${i}.jsonl`);
      const configFile = join(dir, `w${i}.json`);
      writeFileSync(configFile, JSON.stringify({ ...run.config, ops, concurrency: run.concurrency, resultFile }));
      const child = spawn(
        process.execPath,
        [...workerArgs(fileURLToPath(new URL(run.worker, import.meta.url))), configFile],
        { cwd: ROOT, stdio: ['pipe', 'pipe', 'pipe'] },
      );
      let stderr = '';
      child.stderr.on('data', (d) => (stderr += d));
      const ready = new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (d) => String(d).includes('ready') && resolve());
        child.once('exit', (code) => reject(new Error(`worker ${i} exited (${code}) before it was ready:\n${stderr}`)));
      });
      const done = new Promise<void>((resolve, reject) =>
        child.once('exit', (code, signal) =>
          code === 0 ? resolve() : reject(new Error(`worker ${i} failed (${code ?? signal}):\n${stderr}`)),
        ),
      );
      ready.catch(() => {});
      done.catch(() => {});
      return { child, ready, done, resultFile };
    });
    const timer = setTimeout(() => workers.forEach((w) => w.child.kill('SIGKILL')), run.timeoutMs);
    let finished = false;
    try {
      await Promise.all(workers.map((w) => w.ready));
      for (const w of workers) w.child.stdin.end('go\n');
      const all = Promise.all(workers.map((w) => w.done)).finally(() => (finished = true));
      await Promise.all([all, run.during(() => finished)]);
    } finally {
      clearTimeout(timer);
      for (const w of workers) if (w.child.exitCode === null) w.child.kill('SIGKILL');
    }
    return workers.flatMap((w) =>
      existsSync(w.resultFile)
        ? readFileSync(w.resultFile, 'utf8')
            .split('\n')
            .filter((l) => l.endsWith('}'))
            .map((l) => JSON.parse(l) as O)
        : [],
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

/** Deterministic shuffle (seeded), so a failing storm can be reasoned about. */
export function shuffle<T>(items: T[], seed: number): T[] {
  let state = seed >>> 0 || 1;
  for (let i = items.length - 1; i > 0; i--) {
    state = (Math.imul(state, 1664525) + 1013904223) >>> 0;
    const j = state % (i + 1);
    [items[i], items[j]] = [items[j]!, items[i]!];
  }
  return items;
}
