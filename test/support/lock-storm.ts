/**
 * Multi-process lock and counter storms against any store URL (SQLite file now; PostgreSQL
 * and Redis reuse it unchanged by passing their isolating URL).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDibs, type Dibs } from '../../src/index.js';
import assert from 'node:assert/strict';
import { workerArgs } from './node-worker.js';

const WORKER = new URL('./lock-worker.ts', import.meta.url).pathname;

export interface Section {
  key: string;
  start: number;
  end: number;
  fence: number;
  pid: number;
  ticket?: number;
}

function runWorker(
  config: Record<string, unknown>,
  timeoutMs: number,
  onSpawn?: (child: ChildProcess) => void,
): Promise<string[]> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...workerArgs(WORKER), JSON.stringify(config)], {
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    onSpawn?.(child);
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
    child.on('exit', (code) => {
      clearTimeout(timer);
      if (code === 0) resolve(out.split('\n').filter(Boolean));
      else reject(new Error(`lock worker exited ${code}: ${err}`));
    });
  });
}

interface LockStormOptions {
  store: string;
  processes: number;
  keys: string[];
  rounds: number;
  holdMs?: number;
  timeoutMs?: number;
  ttlMs?: number;
}

/** `processes` OS processes each run `rounds` critical sections over `keys`; returns the log. */
export async function runLockStorm(opts: LockStormOptions): Promise<Section[]> {
  const outs = await Promise.all(
    Array.from({ length: opts.processes }, () =>
      runWorker(
        {
          store: opts.store,
          mode: 'exclusive',
          keys: opts.keys,
          rounds: opts.rounds,
          holdMs: opts.holdMs ?? 5,
          counter: '',
        },
        opts.timeoutMs ?? 120_000,
      ),
    ),
  );
  return outs.flat().map((line) => JSON.parse(line) as Section);
}

/**
 * The storm under faults: a round failing as `unavailable` is retried; a section whose lease was
 * lost before it ended is counted, not logged. Returns the exclusive sections and those counts.
 */
export async function runLockStormUnderFaults(
  opts: LockStormOptions,
): Promise<{ sections: Section[]; unavailable: number; lost: number }> {
  const outs = await Promise.all(
    Array.from({ length: opts.processes }, () =>
      runWorker(
        {
          store: opts.store,
          mode: 'exclusive',
          keys: opts.keys,
          rounds: opts.rounds,
          holdMs: opts.holdMs ?? 5,
          counter: '',
          ttlMs: opts.ttlMs ?? 3_000,
          retryUnavailable: true,
        },
        opts.timeoutMs ?? 240_000,
      ),
    ),
  );
  const lines = outs.flat().map((line) => JSON.parse(line) as Section | { unavailable: number; lost: number });
  const sections = lines.filter((l): l is Section => 'key' in l);
  const stats = lines.filter((l): l is { unavailable: number; lost: number } => 'unavailable' in l);
  assert.equal(stats.length, opts.processes, 'every worker finished');
  return {
    sections,
    unavailable: stats.reduce((n, s) => n + s.unavailable, 0),
    lost: stats.reduce((n, s) => n + s.lost, 0),
  };
}

/** One key: no two sections overlap and fences increase with time. */
export function assertNoOverlap(sections: Section[], key: string): void {
  const mine = sections.filter((s) => s.key === key).sort((a, b) => a.start - b.start);
  for (let i = 1; i < mine.length; i++) {
    assert.ok(
      mine[i]!.start >= mine[i - 1]!.end,
      `key ${key}: sections overlap ${JSON.stringify(mine[i - 1])} / ${JSON.stringify(mine[i])}`,
    );
    assert.ok(mine[i]!.fence > mine[i - 1]!.fence, `key ${key}: fence did not increase with time`);
  }
}

/** Per key: no two sections overlap and fences increase with time; across keys: some overlap. */
export function assertMutualExclusion(sections: Section[], keys: string[]): void {
  let crossKeyOverlap = false;
  for (const key of keys) assertNoOverlap(sections, key);
  const all = [...sections].sort((a, b) => a.start - b.start);
  for (let i = 1; i < all.length && !crossKeyOverlap; i++) {
    for (let j = i - 1; j >= 0 && j >= i - 20; j--)
      if (all[j]!.key !== all[i]!.key && all[j]!.end > all[i]!.start) crossKeyOverlap = true;
  }
  assert.ok(crossKeyOverlap, 'different keys never ran concurrently: locks are too coarse');
}

/** `processes` OS processes each increment `counter` `rounds` times. */
export async function runCounterStorm(opts: {
  store: string;
  processes: number;
  counter: string;
  rounds: number;
  timeoutMs?: number;
  /** An increment failing as `unavailable` is counted instead of ending its worker (fault tests). */
  retryUnavailable?: boolean;
}): Promise<{ done: number; unavailable: number }> {
  const outs = await Promise.all(
    Array.from({ length: opts.processes }, () =>
      runWorker(
        {
          store: opts.store,
          mode: 'count',
          keys: [],
          rounds: opts.rounds,
          holdMs: 0,
          counter: opts.counter,
          ...(opts.retryUnavailable ? { retryUnavailable: true } : {}),
        },
        opts.timeoutMs ?? 120_000,
      ),
    ),
  );
  const lines = outs.flat().map((line) => JSON.parse(line) as { done: number; unavailable: number });
  return {
    done: lines.reduce((n, l) => n + l.done, 0),
    unavailable: lines.reduce((n, l) => n + l.unavailable, 0),
  };
}

async function waitersAtLeast(dibs: Dibs, key: string, n: number): Promise<void> {
  for (const deadline = Date.now() + 120_000; Date.now() < deadline; await sleep(50)) {
    if ((await dibs.locks.inspect(key)).waiters >= n) return;
  }
  assert.fail(`${key}: fewer than ${n} waiters after 120 s`);
}

/**
 * Fair locks across processes: this process holds `key` while a victim process joins the line and
 * is SIGKILLed there (its ticket must stop blocking once it lapses), then `processes` workers join
 * the line and each runs `rounds` fair critical sections. Asserts: every section ran, no two
 * overlap, fences grow, and in fence (grant) order the tickets — the store's sequence, not any
 * client's clock — strictly increase. Returns the sections.
 */
export async function runFairLockStorm(opts: {
  store: string;
  processes: number;
  key: string;
  rounds: number;
  timeoutMs?: number;
}): Promise<Section[]> {
  const dibs = await openDibs(opts.store);
  try {
    const holder = await dibs.locks.acquire(opts.key, { ttlMs: 300_000 });
    const config = { store: opts.store, mode: 'fair', keys: [opts.key], holdMs: 5, counter: '' };
    let victim: ChildProcess | undefined;
    const died = runWorker({ ...config, rounds: 1 }, opts.timeoutMs ?? 240_000, (child) => (victim = child)).catch(
      () => 'killed',
    );
    await waitersAtLeast(dibs, opts.key, 1);
    victim!.kill('SIGKILL');
    assert.equal(await died, 'killed');
    const workers = Array.from({ length: opts.processes }, () =>
      runWorker({ ...config, rounds: opts.rounds }, opts.timeoutMs ?? 240_000),
    );
    await waitersAtLeast(dibs, opts.key, opts.processes); // the dead ticket may already have lapsed
    await dibs.locks.release(holder);
    const sections = (await Promise.all(workers)).flat().map((line) => JSON.parse(line) as Section);
    assert.equal(
      sections.length,
      opts.processes * opts.rounds,
      'every fair section ran (the dead waiter blocked nobody for good)',
    );
    assertNoOverlap(sections, opts.key);
    const ticketed = sections.filter((s) => s.ticket !== undefined).sort((a, b) => a.fence - b.fence);
    assert.ok(ticketed.length >= opts.processes, 'the waiters queued with tickets');
    for (let i = 1; i < ticketed.length; i++) {
      assert.ok(
        ticketed[i]!.ticket! > ticketed[i - 1]!.ticket!,
        `grants out of ticket order: ${JSON.stringify(ticketed.map((s) => [s.fence, s.ticket, s.pid]))}`,
      );
    }
    return sections;
  } finally {
    await dibs.close();
  }
}
