/**
 * Runs the worker processes of a load test: spawns them with `process.execPath`, waits until
 * every one has opened its client (start barrier), releases them together, tails their result
 * files while they run (live progress) and collects every answer.
 *
 * Works from the TypeScript sources (through tsx) and from the built JavaScript in dist/: the
 * worker is the file beside this module with the same extension, and `--import tsx` is passed
 * only when a .ts file has to be run.
 */
import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { closeSync, existsSync, fstatSync, mkdtempSync, openSync, readSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import { fileURLToPath } from 'node:url';
import type { WorkMode } from './targets/target.js';
import type { LoadTarget, PlannedClaim, TimedOutcome } from './types.js';

export interface WorkerConfig {
  index: number;
  target: LoadTarget;
  mode: WorkMode;
  /** The pool, the sale, or the lock-key prefix. */
  pool: string;
  ops: PlannedClaim[];
  concurrency: number;
  resultFile: string;
}

export interface WorkersOptions {
  target: LoadTarget;
  /** Default: pool claims. */
  mode?: WorkMode;
  pool: string;
  lanes: PlannedClaim[][];
  concurrency: number;
  /** Every worker is killed after this long (from spawn). */
  timeoutMs: number;
  /** Called with each batch of new answers as they are read. */
  onOutcomes?: (batch: TimedOutcome[]) => void;
  /** Called once every worker is ready and `go` has been sent. */
  onStart?: () => void;
  /** How often result files are read while the run is going (default 250 ms). */
  pollMs?: number;
}

export interface WorkersResult {
  outcomes: TimedOutcome[];
  /** Seconds from `go` until the last worker exited. */
  seconds: number;
  /** Workers that crashed or were killed, with the tail of their stderr. */
  failures: string[];
  timedOut: boolean;
}

/** The run was stopped by SIGINT/SIGTERM before it finished. */
export class LoadtestInterrupted extends Error {
  override readonly name = 'LoadtestInterrupted';
  constructor() {
    super('interrupted: the worker processes were stopped before the run finished');
  }
}

const TS = /\.[cm]?ts$/;
const HERE = import.meta.url;
const WORKER = fileURLToPath(new URL(`./worker${TS.test(HERE) ? '.ts' : '.js'}`, HERE));

/** The `--import` argument that loads tsx: resolved from here, so it works whatever the cwd is. */
function tsxImport(): string {
  try {
    return import.meta.resolve('tsx');
  } catch {
    return 'tsx';
  }
}

export function workerCommand(target: LoadTarget): { file: string; args: string[] } {
  const needsTsx =
    TS.test(WORKER) || (target.kind === 'store' && target.storeModule !== undefined && TS.test(target.storeModule));
  return { file: process.execPath, args: [...(needsTsx ? ['--import', tsxImport()] : []), WORKER] };
}

/** Reads the complete JSON lines appended to a file since the last read. A torn last line waits. */
class Tail {
  private offset = 0;
  private rest = '';
  private readonly decoder = new StringDecoder('utf8');
  constructor(private readonly file: string) {}

  read(): TimedOutcome[] {
    if (!existsSync(this.file)) return [];
    const fd = openSync(this.file, 'r');
    try {
      const size = fstatSync(fd).size;
      if (size <= this.offset) return [];
      const buffer = Buffer.alloc(size - this.offset);
      const n = readSync(fd, buffer, 0, buffer.length, this.offset);
      this.offset += n;
      const lines = (this.rest + this.decoder.write(buffer.subarray(0, n))).split('\n');
      this.rest = lines.pop() ?? '';
      return lines.filter((l) => l.length > 0).map((l) => JSON.parse(l) as TimedOutcome);
    } finally {
      closeSync(fd);
    }
  }
}

interface Worker {
  child: ChildProcessWithoutNullStreams;
  ready: Promise<void>;
  exited: Promise<number | string>;
  stderr: () => string;
  tail: Tail;
}

export async function runWorkers(options: WorkersOptions): Promise<WorkersResult> {
  const dir = mkdtempSync(join(tmpdir(), 'dibs-loadtest-'));
  const command = workerCommand(options.target);
  const workers: Worker[] = [];
  let timedOut = false;
  const killAll = () =>
    workers.forEach((w) => w.child.exitCode === null && w.child.signalCode === null && w.child.kill('SIGKILL'));
  const timer = setTimeout(() => {
    timedOut = true;
    killAll();
  }, options.timeoutMs);
  // Ctrl-C: stop the workers and clean up, then let the caller see an interruption.
  let interrupted = false;
  const onSignal = () => {
    interrupted = true;
    killAll();
  };
  process.once('SIGINT', onSignal);
  process.once('SIGTERM', onSignal);
  try {
    options.lanes.forEach((ops, index) => {
      const config: WorkerConfig = {
        index,
        target: options.target,
        mode: options.mode ?? { kind: 'pool' },
        pool: options.pool,
        ops,
        concurrency: options.concurrency,
        resultFile: join(dir, `worker-${index}.jsonl`),
      };
      const configFile = join(dir, `worker-${index}.config.json`);
      // The config may carry an API key: readable by this user only.
      writeFileSync(configFile, JSON.stringify(config), { mode: 0o600 });
      const child = spawn(command.file, [...command.args, configFile], {
        cwd: process.cwd(),
        stdio: ['pipe', 'pipe', 'pipe'],
      });
      let stderr = '';
      child.stderr.on('data', (d: Buffer) => (stderr = (stderr + String(d)).slice(-4000)));
      const exited = new Promise<number | string>((resolve) =>
        child.once('exit', (code, signal) => resolve(code ?? signal ?? 'unknown')),
      );
      const ready = new Promise<void>((resolve, reject) => {
        let out = '';
        child.stdout.on('data', (d: Buffer) => {
          out += String(d);
          if (out.includes('ready\n')) resolve();
        });
        void exited.then((code) =>
          reject(new Error(`loadtest worker ${index} exited (${code}) before it was ready:\n${stderr.trim()}`)),
        );
      });
      ready.catch(() => {});
      workers.push({ child, ready, exited, stderr: () => stderr, tail: new Tail(config.resultFile) });
    });

    await Promise.all(workers.map((w) => w.ready));
    const started = performance.now();
    for (const w of workers) w.child.stdin.end('go\n');
    options.onStart?.();

    const outcomes: TimedOutcome[] = [];
    const drain = () => {
      for (const w of workers) {
        const batch = w.tail.read();
        if (batch.length === 0) continue;
        for (const o of batch) outcomes.push(o);
        options.onOutcomes?.(batch);
      }
    };
    const poller = setInterval(drain, options.pollMs ?? 250);
    const codes = await Promise.all(workers.map((w) => w.exited)).finally(() => clearInterval(poller));
    const seconds = (performance.now() - started) / 1000;
    if (interrupted) throw new LoadtestInterrupted();
    drain();
    const failures = codes.flatMap((code, i) =>
      code === 0
        ? []
        : [
            `worker ${i} ${timedOut ? 'was stopped by the time limit' : `exited with ${code}`}${workers[i]!.stderr().trim() ? `: ${workers[i]!.stderr().trim().split('\n').slice(-5).join(' | ')}` : ''}`,
          ],
    );
    return { outcomes, seconds, failures, timedOut };
  } finally {
    clearTimeout(timer);
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    killAll();
    rmSync(dir, { recursive: true, force: true });
  }
}
