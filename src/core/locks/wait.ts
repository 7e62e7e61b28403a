/**
 * The one wait loop of every blocking acquire (plain, FIFO within a process, fair across
 * instances): it asks the store's atomic step again on a release of the key — the store's own
 * notification (LISTEN/NOTIFY, pub/sub, a snapshot listener, a wake file or an in-process event),
 * subscribed BEFORE each attempt so a release that lands while the attempt is in flight still
 * wakes it — and otherwise after a safety-net poll that doubles from 5 ms up to SAFETY_POLL_MAX_MS,
 * for a store that cannot notify (another process of SQLite without change notification, a broken
 * listener). It only decides WHEN to ask; the store decides every grant.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { LockBackend } from './backend.js';
import { aborted, lockTimeout } from './errors.js';
import type { Lease } from './types.js';

/** Longest sleep between attempts when no release event arrives (cross-process releases). */
export const SAFETY_POLL_MAX_MS = 200;
const FIRST_POLL_MS = 5;

export interface WaitBounds {
  /** Date.now() after which the loop gives up with `lock_timeout`. */
  deadline: number;
  /** The caller's waitMs, for the timeout's message. */
  waitMs: number;
  signal?: AbortSignal | undefined;
}

/**
 * Calls `attempt` until it returns a lease. After a failed attempt and before waiting,
 * `beforeWait` (if given) may prepare the next attempt and answer true to make it at once (the
 * fair waiter's first ticket). Throws `aborted` when the signal fires, `lock_timeout` at the
 * deadline; whatever `attempt` or `beforeWait` throw passes through.
 */
export async function waitForLease(
  store: LockBackend,
  key: string,
  bounds: WaitBounds,
  attempt: () => Promise<Lease | null>,
  beforeWait?: () => Promise<boolean>,
): Promise<Lease> {
  const { deadline, waitMs, signal } = bounds;
  let delay = FIRST_POLL_MS;
  for (;;) {
    if (signal?.aborted) throw aborted(key, signal.reason);
    const wake = armWake(store, key);
    try {
      const lease = await attempt();
      if (lease) return lease;
      const left = deadline - Date.now();
      if (left <= 0) throw lockTimeout(key, waitMs);
      if (beforeWait && (await beforeWait())) continue;
      await wake.wait(Math.min(left, delay), signal);
    } finally {
      wake.dispose();
    }
    delay = Math.min(delay * 2, SAFETY_POLL_MAX_MS);
  }
}

/**
 * A release subscription for `key`, armed before an attempt: `wait` resolves at once if a release
 * already arrived, else on the next release, after `ms`, or when `signal` aborts.
 */
function armWake(
  store: LockBackend,
  key: string,
): { wait(ms: number, signal: AbortSignal | undefined): Promise<void>; dispose(): void } {
  const ac = new AbortController();
  const unsubscribe = store.onRelease(key, () => ac.abort());
  return {
    async wait(ms, signal) {
      if (ac.signal.aborted) return;
      const stop = () => ac.abort();
      signal?.addEventListener('abort', stop, { once: true });
      try {
        await sleep(ms, undefined, { signal: ac.signal }).catch(() => undefined);
      } finally {
        signal?.removeEventListener('abort', stop);
      }
    },
    dispose: unsubscribe,
  };
}
