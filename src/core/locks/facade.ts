/**
 * `dibs.locks`, `dibs.semaphores`, `dibs.counters`: validate input, wait without busy polling,
 * keep leases alive for runExclusive. The store enforces every rule atomically; this layer only
 * decides WHEN to ask again: on an in-process release event, or after a bounded safety-net poll
 * (SQLite cannot notify other processes of a release).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { CounterBackend, LockBackend } from './backend.js';
import { aborted, leaseLost, lockTimeout, unsupported } from './errors.js';
import { acquireOptionsSchema, counterStepSchema, leaseSchema, lockKeySchema, semaphoreLimitSchema, ttlMsSchema } from './schemas.js';
import type { AcquireOptions, CounterValue, Lease, LeaseGrant, LockInfo, RunExclusiveOptions } from './types.js';
import { parseInput } from '../validate.js';

/** Longest sleep between attempts when no release event arrives (cross-process releases). */
const SAFETY_POLL_MAX_MS = 200;

export class Semaphores {
  /** Waiters of this process per key, in arrival order (FIFO fairness within a process). */
  private readonly queues = new Map<string, symbol[]>();

  constructor(private readonly backend: LockBackend | undefined, private readonly kind: string) {}

  private get store(): LockBackend {
    if (!this.backend) throw unsupported('locks', this.kind);
    return this.backend;
  }

  async tryAcquire(key: string, limit: number, options: Pick<AcquireOptions, 'ttlMs'> = {}): Promise<Lease | null> {
    const k = parseInput(lockKeySchema, key, 'key');
    const n = parseInput(semaphoreLimitSchema, limit, 'limit');
    const ttlMs = parseInput(ttlMsSchema, options.ttlMs ?? 30_000, 'ttlMs');
    const grant = await this.store.tryAcquire(k, n, ttlMs);
    return grant ? toLease(k, n, grant) : null;
  }

  async acquire(key: string, limit: number, options: AcquireOptions = {}): Promise<Lease> {
    const k = parseInput(lockKeySchema, key, 'key');
    const n = parseInput(semaphoreLimitSchema, limit, 'limit');
    const { ttlMs, waitMs, fifo, signal } = parseInput(acquireOptionsSchema, options);
    const store = this.store;
    const deadline = Date.now() + waitMs;
    const me = Symbol(k);
    const queue = this.queues.get(k) ?? [];
    this.queues.set(k, queue);
    queue.push(me);
    try {
      let delay = 5;
      for (;;) {
        if (signal?.aborted) throw aborted(k, signal.reason);
        // Subscribed BEFORE the attempt: a release that lands while tryAcquire is in flight (it
        // saw the old holder) still wakes us, instead of costing a whole safety-net poll.
        const wake = armWake(store, k);
        try {
          const myTurn = !fifo || queue.indexOf(me) < n;
          if (myTurn) {
            const grant = await store.tryAcquire(k, n, ttlMs);
            if (grant) return toLease(k, n, grant);
          }
          const left = deadline - Date.now();
          if (left <= 0) throw lockTimeout(k, waitMs);
          await wake.wait(Math.min(left, delay), signal);
        } finally {
          wake.dispose();
        }
        delay = Math.min(delay * 2, SAFETY_POLL_MAX_MS);
      }
    } finally {
      queue.splice(queue.indexOf(me), 1);
      if (queue.length === 0) this.queues.delete(k);
    }
  }

  async renew(lease: Lease, options: { ttlMs?: number } = {}): Promise<Lease> {
    const { key, token } = parseInput(leaseSchema, lease, 'lease');
    const ttlMs = parseInput(ttlMsSchema, options.ttlMs ?? 30_000, 'ttlMs');
    return toLease(key, lease.limit ?? 1, await this.store.renew(key, token, ttlMs));
  }

  async release(lease: Lease): Promise<void> {
    const { key, token } = parseInput(leaseSchema, lease, 'lease');
    await this.store.release(key, token);
  }

  async inspect(key: string): Promise<LockInfo> {
    const k = parseInput(lockKeySchema, key, 'key');
    const info = await this.store.inspect(k);
    return { ...info, waiters: this.queues.get(k)?.length ?? 0 };
  }

  /**
   * Holds a slot while `fn` runs: renews at ~0.8×TTL on an unref'd timer, aborts `fn`'s signal
   * when the lease is lost (renew failed, expired, or maxHoldMs reached), releases in finally.
   * A lost lease never throws from a timer (the process never crashes): `fn` sees the signal.
   */
  async runExclusive<T>(key: string, limit: number, fn: (signal: AbortSignal, lease: Lease) => Promise<T>, options: RunExclusiveOptions = {}): Promise<T> {
    const ttlMs = options.ttlMs ?? 30_000;
    let lease = await this.acquire(key, limit, options);
    const lost = new AbortController();
    const loseLease = (reason: string) => { if (!lost.signal.aborted) lost.abort(leaseLost(key).message + ` (${reason})`); };
    const started = Date.now();
    let timer: NodeJS.Timeout | undefined;
    // Ref'd on purpose (bounded by the lease, cleared in finally): a fn awaiting only the signal
    // must still see it. The renew timer below stays unref'd.
    const expiryTimer = () => setTimeout(() => loseLease('expired'), lease.validForMs);
    let expiry = expiryTimer();
    const schedule = () => {
      timer = setTimeout(async () => {
        if (lost.signal.aborted) return;
        if (options.maxHoldMs !== undefined && Date.now() - started >= options.maxHoldMs) return loseLease('maxHoldMs reached');
        try {
          lease = await this.renew(lease, { ttlMs });
          clearTimeout(expiry);
          expiry = expiryTimer();
          schedule();
        } catch {
          loseLease('renew failed');
        }
      }, Math.max(10, Math.floor(Math.min(ttlMs, lease.validForMs) * 0.8))).unref();
    };
    schedule();
    const cap = options.maxHoldMs !== undefined ? setTimeout(() => loseLease('maxHoldMs reached'), options.maxHoldMs) : undefined; // ref'd: a fn awaiting only the signal must still see it
    try {
      return await fn(lost.signal, lease);
    } finally {
      clearTimeout(timer);
      clearTimeout(expiry);
      clearTimeout(cap);
      if (!lost.signal.aborted) await this.release(lease).catch(() => undefined);
      lost.abort('released');
    }
  }
}

/** Mutual exclusion = a semaphore of one. */
export class Locks {
  constructor(private readonly semaphores: Semaphores) {}
  acquire(key: string, options?: AcquireOptions) { return this.semaphores.acquire(key, 1, options); }
  tryAcquire(key: string, options?: Pick<AcquireOptions, 'ttlMs'>) { return this.semaphores.tryAcquire(key, 1, options); }
  renew(lease: Lease, options?: { ttlMs?: number }) { return this.semaphores.renew(lease, options); }
  release(lease: Lease) { return this.semaphores.release(lease); }
  inspect(key: string) { return this.semaphores.inspect(key); }
  runExclusive<T>(key: string, fn: (signal: AbortSignal, lease: Lease) => Promise<T>, options?: RunExclusiveOptions) {
    return this.semaphores.runExclusive(key, 1, fn, options);
  }
}

export class Counters {
  constructor(private readonly backend: CounterBackend | undefined, private readonly kind: string) {}
  private get store(): CounterBackend {
    if (!this.backend) throw unsupported('counters', this.kind);
    return this.backend;
  }
  async incr(name: string, by = 1): Promise<CounterValue> {
    return this.store.incr(parseInput(lockKeySchema, name, 'name'), parseInput(counterStepSchema, by, 'by'));
  }
  async decr(name: string, by = 1): Promise<CounterValue> {
    return this.incr(name, -parseInput(counterStepSchema, by, 'by'));
  }
  async get(name: string): Promise<CounterValue> {
    return this.store.get(parseInput(lockKeySchema, name, 'name'));
  }
  async reset(name: string): Promise<void> {
    return this.store.reset(parseInput(lockKeySchema, name, 'name'));
  }
}

function toLease(key: string, limit: number, grant: LeaseGrant): Lease {
  return { key, limit, ...grant };
}

/**
 * A release subscription for `key`, armed before an attempt: `wait` resolves at once if a release
 * already arrived, else on the next release, after `ms`, or when `signal` aborts.
 */
function armWake(store: LockBackend, key: string): { wait(ms: number, signal: AbortSignal | undefined): Promise<void>; dispose(): void } {
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
