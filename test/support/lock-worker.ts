/**
 * One OS process of the lock storm. argv: JSON config. Modes:
 * - `exclusive`: for `rounds` rounds, pick keys round-robin, runExclusive a short critical
 *   section and print one JSON line { key, start, end, fence, pid } per section. With
 *   `retryUnavailable` (fault tests) a round that fails as `unavailable` is tried again, and a
 *   section whose lease was lost before it ended is not logged as exclusive; the last line is
 *   then { unavailable, lost }.
 * - `fair`: like `exclusive` on keys[0] with `{ fair: true }`; each line also has the lease's `ticket`.
 * - `count`: `rounds` × counters.incr(name) and print { done, unavailable } (acknowledged, and failed
 *   as `unavailable` — only with `retryUnavailable`; otherwise any failure ends the worker).
 * Prints nothing else on stdout; exits non-zero on any unexpected error.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { openDibs } from '../../src/index.js';

interface Config {
  store: string;
  mode: 'exclusive' | 'fair' | 'count';
  keys: string[];
  rounds: number;
  holdMs: number;
  counter: string;
  ttlMs?: number;
  retryUnavailable?: boolean;
}
const config = JSON.parse(process.argv[2]!) as Config;
/**
 * Section times in ms on CLOCK_MONOTONIC, one clock for every process of the machine. Not
 * `performance.timeOrigin + performance.now()`: timeOrigin is a wall-clock reading taken once at
 * process start, and a worker preempted during its start on a loaded machine carries that skew into
 * every stamp — enough to make sections of different processes look overlapped (a CI run saw 12 ms).
 */
const now = () => Number(process.hrtime.bigint()) / 1e6;
/** Under faults a worker may start while the store is unreachable: it retries (bounded) like a real instance would. */
async function open() {
  for (let attempt = 1; ; attempt++) {
    try {
      return await openDibs(config.store);
    } catch (error) {
      if (!config.retryUnavailable || (error as { code?: string }).code !== 'unavailable' || attempt >= 100)
        throw error;
      await sleep(100);
    }
  }
}
const dibs = await open();
try {
  if (config.mode === 'fair') {
    const key = config.keys[0]!;
    for (let i = 0; i < config.rounds; i++) {
      await dibs.locks.runExclusive(
        key,
        async (_signal, lease) => {
          const start = now();
          await sleep(config.holdMs);
          const end = now();
          process.stdout.write(
            `${JSON.stringify({ key, start, end, fence: lease.fence, pid: process.pid, ticket: lease.ticket })}\n`,
          );
        },
        { ttlMs: config.ttlMs ?? 60_000, waitMs: 200_000, fair: true },
      );
    }
  } else if (config.mode === 'exclusive') {
    let unavailable = 0;
    let lost = 0;
    for (let i = 0; i < config.rounds; i++) {
      const key = config.keys[(i + process.pid) % config.keys.length]!;
      try {
        await dibs.locks.runExclusive(
          key,
          async (signal, lease) => {
            const start = now();
            await sleep(config.holdMs);
            const end = now();
            if (signal.aborted) lost++;
            else process.stdout.write(`${JSON.stringify({ key, start, end, fence: lease.fence, pid: process.pid })}\n`);
          },
          { ttlMs: config.ttlMs ?? 30_000, waitMs: 60_000 },
        );
      } catch (error) {
        if (!config.retryUnavailable || (error as { code?: string }).code !== 'unavailable') throw error;
        unavailable++;
        i--;
        await sleep(20);
      }
    }
    if (config.retryUnavailable) process.stdout.write(`${JSON.stringify({ unavailable, lost })}\n`);
  } else {
    // with `retryUnavailable` an increment that failed as `unavailable` is counted, not fatal: it
    // may or may not have been applied, so the checker allows it either way
    let done = 0;
    let unavailable = 0;
    for (let i = 0; i < config.rounds; i++) {
      try {
        await dibs.counters.incr(config.counter, 1);
        done++;
      } catch (error) {
        if (!config.retryUnavailable || (error as { code?: string }).code !== 'unavailable') throw error;
        unavailable++;
      }
    }
    process.stdout.write(`${JSON.stringify({ done, unavailable })}\n`);
  }
} finally {
  await dibs.close();
}
