/**
 * `dibs serve --workers N`: N service processes share one port through node:cluster (the primary
 * accepts connections and hands them to the workers round-robin), so the HTTP layer — which costs
 * more CPU per request than a claim does — can use more than one core.
 *
 * What runs once, in the primary, before forking: opening the store (its migrations run once) and
 * `--demo` (seeding and the printed admin key). What runs in every worker: the HTTP server and the
 * background jobs — every job is one atomic, idempotent step in the store and the outbox
 * dispatcher leases events, so workers run them side by side like separate instances do
 * (src/jobs/runner.ts). Metrics are per worker (a scrape is answered by one worker; each series
 * carries a `worker` label).
 *
 * Shutdown: SIGTERM/SIGINT to the primary is forwarded to every worker, each shuts down
 * gracefully (stop accepting, finish requests in flight, finish the job in flight, close the
 * store); the primary exits 0 only when every worker did. A worker that dies otherwise is
 * restarted (after a back-off that grows while workers keep dying young). A worker whose primary
 * is gone shuts itself down.
 */
import cluster, { type Worker } from 'node:cluster';
import { availableParallelism } from 'node:os';
import { openDibs } from '../index.js';
import { onShutdownSignals, prepareDemo } from './server.js';

/** `auto` → the machine's available parallelism; a number as is. */
export function workerCount(workers: number | 'auto'): number {
  return workers === 'auto' ? Math.max(1, availableParallelism()) : workers;
}

/** True in a process forked by `runPrimary` (it serves; the primary only supervises). */
export const isServiceWorker = (): boolean => cluster.isWorker;

const LISTENING = 'dibs:listening';

/** In a worker: tells the primary the server is listening (at `url`). */
export function reportListening(url: string): void {
  process.send?.({ type: LISTENING, url });
}

export interface PrimaryOptions {
  store: string;
  workers: number;
  demo?: boolean;
  log?: (line: string) => void;
}

export interface Primary {
  url: string;
  demoKey?: string;
  /** Resolves with the exit code once every worker has exited after a shutdown. */
  exited: Promise<number>;
}

/**
 * Runs the primary: prepares the store (and the demo) once, forks `workers` workers, resolves when
 * all are listening, restarts a worker that dies, and on SIGTERM/SIGINT forwards the signal and
 * exits 0 only when every worker exited 0.
 */
export async function runPrimary(options: PrimaryOptions): Promise<Primary> {
  const log = options.log ?? ((line: string) => process.stderr.write(`${line}\n`));
  const dibs = await openDibs(options.store); // migrations once, before any worker opens the store
  let demoKey: string | undefined;
  try {
    if (options.demo) demoKey = await prepareDemo(dibs);
  } finally {
    await dibs.close();
  }

  let stopping = false;
  let failed = false;
  let crashes = 0;
  const live = new Set<Worker>();
  let allExited!: () => void;
  const everyoneGone = new Promise<void>((resolve) => (allExited = resolve));

  const fork = (restart = false): Promise<string> => {
    const worker = cluster.fork();
    const bornAt = Date.now();
    live.add(worker);
    return new Promise<string>((resolve, reject) => {
      let listening = false;
      worker.on('message', (message: { type?: string; url?: string }) => {
        if (message?.type !== LISTENING) return;
        listening = true;
        if (restart) log(`dibs: worker ${worker.process.pid} (restarted) is serving`);
        resolve(message.url!);
      });
      worker.on('exit', (code, signal) => {
        live.delete(worker);
        if (!listening)
          reject(new Error(`worker ${worker.process.pid} exited before listening (${signal ?? `code ${code}`})`));
        if (stopping) {
          // A worker still starting has answered nothing: however it ends, nothing is lost.
          if (code !== 0 && listening) {
            failed = true;
            log(`dibs: worker ${worker.process.pid} did not shut down cleanly (${signal ?? `code ${code}`})`);
          }
          if (live.size === 0) allExited();
          return;
        }
        if (!listening && !restart) return; // a first worker failing to start fails the start
        // Died (while serving, or while restarting): restart it, backing off while workers keep
        // dying young. The timer stays referenced: the primary lives on even with no worker left.
        crashes = Date.now() - bornAt < 10_000 ? crashes + 1 : 0;
        const delay = Math.min(10_000, 100 * 2 ** Math.min(crashes, 7));
        log(`dibs: worker ${worker.process.pid} died (${signal ?? `code ${code}`}); restarting it in ${delay} ms`);
        setTimeout(() => {
          if (!stopping) fork(true).catch(() => {}); // its exit handler restarts it again
        }, delay);
      });
    });
  };

  const stop = () => {
    if (stopping) return;
    stopping = true;
    if (live.size === 0) allExited();
    for (const worker of live) worker.process.kill('SIGTERM');
  };
  onShutdownSignals(stop, () => {
    log('dibs: second interrupt: stopping the workers without waiting');
    for (const worker of live) worker.process.kill('SIGKILL');
    process.exit(130);
  });

  let url: string;
  try {
    [url] = (await Promise.all(Array.from({ length: options.workers }, () => fork()))) as [string];
  } catch (error) {
    stop();
    await everyoneGone;
    throw error;
  }
  const exited = everyoneGone.then(() => (failed ? 1 : 0));
  return { url, ...(demoKey ? { demoKey } : {}), exited };
}
