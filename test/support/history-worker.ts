/**
 * One OS process of a lock history run. argv: JSON config (HistoryWorkerConfig). For `rounds`
 * rounds it takes a key round-robin with runExclusive and writes `writes` times through the
 * guarded resource with the lease's fence, printing one JSON line per critical section and per
 * write (times in ms on CLOCK_MONOTONIC, shared by every process of the machine), then a stats
 * line. Failures of the lock store as `unavailable`/`timeout` are counted and the round retried.
 *
 * Deliberate faults for proving the checker:
 * - `brokenLock`: the lock key carries the process id, so every process "holds" at once while
 *   writing to the same resource key — a lock that does not exclude;
 * - `pauseMs`: in its first section the process writes once, then ignores its lost-lease signal,
 *   sleeps past its TTL and writes again — the late write a fence guard must refuse.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { openDibs } from '../../src/index.js';
import { GuardedResource, type GuardedResourceConfig } from './guarded-resource.js';

export interface HistoryWorkerConfig {
  store: string;
  resource: GuardedResourceConfig;
  keys: string[];
  rounds: number;
  writes: number;
  holdMs: number;
  ttlMs: number;
  brokenLock?: boolean;
  pauseMs?: number;
  /** Keep taking rounds until this much time has passed (instead of `rounds`). */
  durationMs?: number;
  /**
   * Keep taking rounds until the parent closes this process's stdin (runHistory's `stop`), and for
   * at least `durationMs` if given: a round that must span a fault ends when the test saw the fault
   * over, not on a timer a loaded machine outruns.
   */
  untilStopped?: boolean;
}

const config = JSON.parse(process.argv[2]!) as HistoryWorkerConfig;
const now = () => Number(process.hrtime.bigint()) / 1e6;
const emit = (record: object) => process.stdout.write(`${JSON.stringify(record)}\n`);
const retriable = (error: unknown) => ['unavailable', 'timeout'].includes((error as { code?: string }).code ?? '');

async function open() {
  for (let attempt = 1; ; attempt++) {
    try {
      return await openDibs(config.store);
    } catch (error) {
      if (!retriable(error) || attempt >= 100) throw error;
      await sleep(200);
    }
  }
}

let stopped = false;
if (config.untilStopped) {
  process.stdin.on('end', () => (stopped = true));
  process.stdin.resume();
}
const more = (i: number, started: number) =>
  config.untilStopped
    ? !stopped || now() - started < (config.durationMs ?? 0)
    : config.durationMs !== undefined
      ? now() - started < config.durationMs
      : i < config.rounds;

const resource = new GuardedResource(config.resource);
const dibs = await open();
let unavailable = 0;
let writeSeq = 0;
let paused = false;
try {
  const started = now();
  for (let i = 0; more(i, started); i++) {
    const key = config.keys[(i + process.pid) % config.keys.length]!;
    const lockKey = config.brokenLock ? `${key}:${process.pid}` : key;
    try {
      await dibs.locks.runExclusive(
        lockKey,
        async (signal, lease) => {
          const grantAt = now();
          let lostAt: number | undefined;
          signal.addEventListener('abort', () => (lostAt ??= now()), { once: true });
          const id = `${process.pid}:${lease.fence}`;
          const pause = config.pauseMs !== undefined && !paused;
          for (let w = 0; w < config.writes; w++) {
            if (pause && w === 1) {
              paused = true;
              // Block the event loop (a GC pause, a stopped VM): no renewal, no signal until it ends.
              Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, config.pauseMs!);
            } else if (signal.aborted && !pause) break;
            const writeId = `${id}:${writeSeq++}`;
            const invokeAt = now();
            let outcome: 'accepted' | 'refused' | 'unknown';
            try {
              outcome = (await resource.write(key, lease.fence, id, writeId)) ? 'accepted' : 'refused';
            } catch {
              outcome = 'unknown';
            }
            emit({ t: 'write', id: writeId, lease: id, key, fence: lease.fence, invokeAt, completeAt: now(), outcome });
            await sleep(config.holdMs);
          }
          emit({
            t: 'section',
            lease: id,
            key,
            fence: lease.fence,
            grantAt,
            endAt: now(),
            ...(lostAt !== undefined ? { lostAt } : {}),
          });
        },
        { ttlMs: config.ttlMs, waitMs: 60_000 },
      );
    } catch (error) {
      if (!retriable(error)) throw error;
      unavailable++;
      i--;
      await sleep(50);
    }
  }
  emit({ t: 'stats', unavailable });
} finally {
  await dibs.close().catch(() => undefined);
  await resource.close().catch(() => undefined);
}
