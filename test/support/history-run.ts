/**
 * Runs lock history workers (history-worker.ts) as OS processes — optionally on another "host"
 * (a command prefix such as `ip netns exec NS`) — and judges the recorded history with the
 * checker against the guarded resource's own log.
 */
import { spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  checkHistory,
  type History,
  type LogRecord,
  type SectionRecord,
  type Verdict,
  type WriteRecord,
} from './history-checker.js';
import type { HistoryWorkerConfig } from './history-worker.js';
import { workerArgs } from './node-worker.js';

const WORKER = new URL('./history-worker.ts', import.meta.url).pathname;

export interface WorkerRun {
  config: HistoryWorkerConfig;
  prefix?: string[];
}

function runWorker(run: WorkerRun, timeoutMs: number, stop?: Promise<unknown>): Promise<string[]> {
  const argv = [...(run.prefix ?? []), process.execPath, ...workerArgs(WORKER), JSON.stringify(run.config)];
  return new Promise((resolve, reject) => {
    const child = spawn(argv[0]!, argv.slice(1), {
      stdio: [stop ? 'pipe' : 'ignore', 'pipe', 'pipe'],
      cwd: new URL('../..', import.meta.url).pathname,
    });
    // a worker with `untilStopped` ends its rounds when its stdin closes
    const end = () => child.stdin?.end();
    stop?.then(end, end);
    child.stdin?.on('error', () => {});
    let out = '';
    let err = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(out.split('\n').filter(Boolean));
      else reject(new Error(`history worker exited ${code ?? signal}: ${err.slice(-2000)}`));
    });
  });
}

export interface HistoryResult {
  history: History;
  verdict: Verdict;
  unavailable: number;
}

/**
 * Runs the workers to the end, then reads the resource's log and checks the whole history.
 * `timeoutMs` only catches a hung worker (SIGKILL); `stop` settling closes the workers' stdin,
 * which ends the rounds of workers configured `untilStopped`.
 */
export async function runHistory(
  runs: WorkerRun[],
  readLog: () => Promise<LogRecord[]>,
  timeoutMs = 120_000,
  stop?: Promise<unknown>,
): Promise<HistoryResult> {
  const lines = (await Promise.all(runs.map((r) => runWorker(r, timeoutMs, stop))))
    .flat()
    .map((l) => JSON.parse(l) as { t: string } & Record<string, unknown>);
  const sections = lines.filter((l) => l.t === 'section') as unknown as SectionRecord[];
  const writes = lines.filter((l) => l.t === 'write') as unknown as WriteRecord[];
  const unavailable = lines.filter((l) => l.t === 'stats').reduce((n, l) => n + (l.unavailable as number), 0);
  const history = { sections, writes, log: await readLog() };
  const verdict = checkHistory(history);
  if (verdict.violations.length > 0) {
    // keep the evidence: the whole history, for reading the violation in context
    const file = join(tmpdir(), `dibs-history-${process.pid}-${Date.now()}.json`);
    writeFileSync(file, JSON.stringify({ verdict, history, stderr: lines.filter((l) => l.t === 'debug') }, null, 1));
    process.stderr.write(`history with violations written to ${file}\n`);
  }
  return { history, verdict, unavailable };
}
