/**
 * The service's background jobs: sale activation (with wishlist notifications), sale
 * expiration, the hold-expiry sweep, outbox delivery and (Firestore) finishing pool deletions
 * whose deleter died. Every job is one atomic, idempotent
 * step in the store (activation marks a sale announced in the same transaction that writes its
 * events; the dispatcher leases events), so any number of service processes can run them side
 * by side — no leader election needed.
 */
import type { Dibs } from '../core/dibs.js';
import type { OutboxDispatcher } from '../notify/dispatcher.js';
import { untraced } from '../tracing/otel.js';

export interface JobSpec {
  name: string;
  everyMs: number;
  run: () => Promise<unknown>;
}

export interface JobEvents {
  onRun?: (name: string, result: unknown, ms: number) => void;
  onError?: (name: string, error: unknown) => void;
}

/** `pools.finish-deletions`: how often, and how much one run may do (batches of up to 400 documents). */
export const FINISH_DELETIONS_EVERY_MS = 60_000;
export const FINISH_DELETIONS_BUDGET = { deletions: 10, batches: 25 } as const;

/** The standard jobs for a Dibs instance (forecast alerts only where the store has forecasts). */
export function standardJobs(dibs: Dibs, options: { dispatcher?: OutboxDispatcher; everyMs?: number } = {}): JobSpec[] {
  const every = options.everyMs ?? 1000;
  const jobs: JobSpec[] = [
    { name: 'sales.activate', everyMs: every, run: () => dibs.sales.activateDue() },
    { name: 'sales.end', everyMs: every, run: () => dibs.sales.endDue() },
    { name: 'holds.expire', everyMs: every, run: () => dibs.sales.expireHolds() },
  ];
  if (dibs.backend.forecasts) {
    jobs.push({ name: 'forecast.alerts', everyMs: Math.max(every, 5000), run: () => dibs.forecasts.checkWatches() });
  }
  const pools = dibs.backend.pools;
  if (pools.finishDeletions) {
    // a deletion's leftovers cost storage but answer no request: once a minute, a bounded amount of work
    jobs.push({
      name: 'pools.finish-deletions',
      everyMs: Math.max(every, FINISH_DELETIONS_EVERY_MS),
      run: () => pools.finishDeletions!(FINISH_DELETIONS_BUDGET),
    });
  }
  if (options.dispatcher) {
    const dispatcher = options.dispatcher;
    jobs.push({ name: 'outbox.dispatch', everyMs: every, run: () => dispatcher.drain(20) });
  }
  return jobs;
}

export class JobRunner {
  private readonly timers = new Map<string, NodeJS.Timeout>();
  private readonly inFlight = new Set<Promise<unknown>>();
  private stopped = true;

  constructor(
    private readonly jobs: JobSpec[],
    private readonly events: JobEvents = {},
  ) {}

  start(): void {
    this.stopped = false;
    for (const job of this.jobs) this.schedule(job, 0);
  }

  /** Runs every job once now (tests, `dibs jobs run`). */
  async runAll(): Promise<Record<string, unknown>> {
    const results: Record<string, unknown> = {};
    for (const job of this.jobs) results[job.name] = await this.runJob(job);
    return results;
  }

  /** Stops scheduling and waits for runs in flight, so a graceful shutdown cuts nothing off. */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const timer of this.timers.values()) clearTimeout(timer);
    this.timers.clear();
    await Promise.allSettled([...this.inFlight]);
  }

  private schedule(job: JobSpec, delayMs: number): void {
    if (this.stopped) return;
    const timer = setTimeout(async () => {
      await this.runJob(job).catch(() => undefined);
      this.schedule(job, job.everyMs);
    }, delayMs);
    timer.unref();
    this.timers.set(job.name, timer);
  }

  private async runJob(job: JobSpec): Promise<unknown> {
    const started = performance.now();
    // Untraced: a sweep every second would start a trace every second. Outbox deliveries make
    // spans of their own (tracing/delivery.ts).
    const run = untraced(() => job.run());
    this.inFlight.add(run);
    try {
      const result = await run;
      this.events.onRun?.(job.name, result, performance.now() - started);
      return result;
    } catch (error) {
      this.events.onError?.(job.name, error);
      throw error;
    } finally {
      this.inFlight.delete(run);
    }
  }
}
