/**
 * `dibs.locks`, `dibs.semaphores`, `dibs.counters`: validate input, wait without busy polling,
 * keep leases alive for runExclusive. The store enforces every rule atomically; this layer only
 * decides WHEN to ask again: on an in-process release event, or after a bounded safety-net poll
 * (SQLite cannot notify other processes of a release).
 */
import type { CounterBackend, LockBackend } from './backend.js';
import { grantTooLate, leaseLost, lockTimeout, unsupported } from './errors.js';
import { DibsError } from '../errors.js';
import { waitForLease } from './wait.js';
import {
  acquireOptionsSchema,
  counterStepSchema,
  leaseSchema,
  lockKeySchema,
  semaphoreLimitSchema,
  tryAcquireOptionsSchema,
  ttlMsSchema,
} from './schemas.js';
import type { AcquireOptions, CounterValue, Lease, LeaseGrant, LockInfo, RunExclusiveOptions } from './types.js';
import { listOptionsSchema } from '../schemas.js';
import type { Page } from '../types.js';
import { parseInput } from '../validate.js';

export class Semaphores {
  /** Waiters of this process per key, in arrival order (FIFO fairness within a process). */
  private readonly queues = new Map<string, symbol[]>();

  constructor(
    private readonly store: LockBackend,
    private readonly kind: string,
  ) {}

  /** With `fair`, a free slot is taken only if nobody waits in the store's line for this key. */
  async tryAcquire(
    key: string,
    limit: number,
    options: Pick<AcquireOptions, 'ttlMs' | 'fair'> = {},
  ): Promise<Lease | null> {
    const k = parseInput(lockKeySchema, key, 'key');
    const n = parseInput(semaphoreLimitSchema, limit, 'limit');
    const { ttlMs, fair } = parseInput(tryAcquireOptionsSchema, options);
    const sentAt = performance.now();
    const grant = fair
      ? await this.store.tryAcquireFair(k, n, ttlMs, fairQueueKey(k), null)
      : await this.store.tryAcquire(k, n, ttlMs);
    return grant ? anchored(this.store, k, n, grant, ttlMs, sentAt) : null;
  }

  async acquire(key: string, limit: number, options: AcquireOptions = {}): Promise<Lease> {
    const k = parseInput(lockKeySchema, key, 'key');
    const n = parseInput(semaphoreLimitSchema, limit, 'limit');
    const { ttlMs, waitMs, fifo, fair, signal } = parseInput(acquireOptionsSchema, options);
    const store = this.store;
    const deadline = Date.now() + waitMs;
    const me = Symbol(k);
    const queue = this.queues.get(k) ?? [];
    this.queues.set(k, queue);
    queue.push(me);
    if (fair) {
      try {
        return await acquireFair(store, k, n, ttlMs, deadline, waitMs, signal);
      } finally {
        queue.splice(queue.indexOf(me), 1);
        if (queue.length === 0) this.queues.delete(k);
      }
    }
    const registration = waitMs > 0 ? new WaiterRegistration(store, k) : undefined;
    let late = false;
    try {
      return await waitForLease(store, k, { deadline, waitMs, signal }, async () => {
        if (fifo && queue.indexOf(me) >= n) return null;
        const sentAt = performance.now();
        const grant = await store.tryAcquire(k, n, ttlMs);
        const lease = grant && anchored(store, k, n, grant, ttlMs, sentAt);
        late = grant !== null && lease === null;
        return lease;
      });
    } catch (error) {
      // A waiter that gives up is gone from inspect when acquire rejects (a granted one does not
      // wait for this: the handoff stays one round trip).
      await registration?.end();
      if (late && error instanceof DibsError && error.code === 'lock_timeout' && !signal?.aborted)
        throw grantTooLate(k, waitMs, ttlMs);
      throw error;
    } finally {
      void registration?.end();
      queue.splice(queue.indexOf(me), 1);
      if (queue.length === 0) this.queues.delete(k);
    }
  }

  /** Extends the lease by `ttlMs`, by default by the TTL it was acquired with (carried in its token). */
  async renew(lease: Lease, options: { ttlMs?: number } = {}): Promise<Lease> {
    const { key, token } = parseInput(leaseSchema, lease, 'lease');
    const held = splitToken(token);
    const ttlMs = parseInput(ttlMsSchema, options.ttlMs ?? held.ttlMs ?? DEFAULT_TTL_MS, 'ttlMs');
    const sentAt = performance.now();
    const renewed = anchored(
      this.store,
      key,
      lease.limit ?? 1,
      await this.store.renew(key, held.storeToken, ttlMs),
      held.ttlMs ?? ttlMs,
      sentAt,
    );
    if (!renewed) throw leaseLost(key); // the reply came back too late to count on the renewal
    return renewed;
  }

  async release(lease: Lease): Promise<void> {
    const { key, token } = parseInput(leaseSchema, lease, 'lease');
    await this.store.release(key, splitToken(token).storeToken);
  }

  /**
   * Live holders, the last fence, and the waiters: those of every instance that have waited longer
   * than WAITER_REGISTER_AFTER_MS (registered in the store), or this process's own if more.
   */
  async inspect(key: string): Promise<LockInfo> {
    const k = parseInput(lockKeySchema, key, 'key');
    const [info, registered, line] = await Promise.all([
      this.store.inspect(k),
      this.store.inspect(waitersKey(k)),
      this.store.inspect(fairQueueKey(k)),
    ]);
    return {
      ...info,
      waiters: Math.max(this.queues.get(k)?.length ?? 0, registered.holders.length + line.holders.length),
    };
  }

  /** Lock keys ever granted (each keeps its last fence), in key order: `unsupported` on stores that cannot list them. */
  async list(options: { limit?: number; after?: string } = {}): Promise<Page<string>> {
    if (!this.store.listKeys) throw unsupported('lists of lock keys', this.kind);
    const { limit, after } = parseInput(listOptionsSchema, options);
    return this.store.listKeys({ limit, ...(after !== undefined ? { after } : {}) });
  }

  /**
   * Holds a slot while `fn` runs: renews at ~0.8×TTL on an unref'd timer, aborts `fn`'s signal
   * when the lease is lost (renew failed, expired, or maxHoldMs reached), releases in finally.
   * A lost lease never throws from a timer (the process never crashes): `fn` sees the signal.
   * Every time is counted from when the acquire/renew request was SENT (see `anchored`), so reply
   * latency, a stalled network or a blocked event loop make the signal fire earlier, never later
   * than the store's expiry.
   */
  async runExclusive<T>(
    key: string,
    limit: number,
    fn: (signal: AbortSignal, lease: Lease) => Promise<T>,
    options: RunExclusiveOptions = {},
  ): Promise<T> {
    const ttlMs = options.ttlMs ?? DEFAULT_TTL_MS;
    let lease = await this.acquire(key, limit, options);
    let anchor = anchorOf(lease);
    const lost = new AbortController();
    const loseLease = (reason: string) => {
      if (!lost.signal.aborted) lost.abort(`${leaseLost(key).message} (${reason})`);
    };
    const started = performance.now();
    let timer: NodeJS.Timeout | undefined;
    // Ref'd on purpose (bounded by the lease, cleared in finally): a fn awaiting only the signal
    // must still see it. The renew timer below stays unref'd.
    const expiryTimer = () => setTimeout(() => loseLease('expired'), Math.max(0, anchor.deadline - performance.now()));
    let expiry = expiryTimer();
    const schedule = () => {
      const renewAt = anchor.sentAt + Math.min(ttlMs, anchor.validForMs) * 0.8;
      timer = setTimeout(
        async () => {
          if (lost.signal.aborted) return;
          if (options.maxHoldMs !== undefined && performance.now() - started >= options.maxHoldMs)
            return loseLease('maxHoldMs reached');
          try {
            lease = await this.renew(lease, { ttlMs });
            const renewed = anchorOf(lease);
            anchor = { ...renewed, deadline: Math.max(anchor.deadline, renewed.deadline) };
            clearTimeout(expiry);
            expiry = expiryTimer();
            schedule();
          } catch {
            loseLease('renew failed');
          }
        },
        Math.max(10, Math.floor(renewAt - performance.now())),
      ).unref();
    };
    schedule();
    const cap =
      options.maxHoldMs !== undefined ? setTimeout(() => loseLease('maxHoldMs reached'), options.maxHoldMs) : undefined; // ref'd: a fn awaiting only the signal must still see it
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
  acquire(key: string, options?: AcquireOptions) {
    return this.semaphores.acquire(key, 1, options);
  }
  tryAcquire(key: string, options?: Pick<AcquireOptions, 'ttlMs' | 'fair'>) {
    return this.semaphores.tryAcquire(key, 1, options);
  }
  renew(lease: Lease, options?: { ttlMs?: number }) {
    return this.semaphores.renew(lease, options);
  }
  release(lease: Lease) {
    return this.semaphores.release(lease);
  }
  inspect(key: string) {
    return this.semaphores.inspect(key);
  }
  runExclusive<T>(key: string, fn: (signal: AbortSignal, lease: Lease) => Promise<T>, options?: RunExclusiveOptions) {
    return this.semaphores.runExclusive(key, 1, fn, options);
  }
}

export class Counters {
  constructor(
    private readonly store: CounterBackend,
    private readonly kind: string,
  ) {}
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
  /** Counter names in name order: `unsupported` on stores that cannot list them. */
  async list(options: { limit?: number; after?: string } = {}): Promise<Page<string>> {
    if (!this.store.listNames) throw unsupported('lists of counters', this.kind);
    const { limit, after } = parseInput(listOptionsSchema, options);
    return this.store.listNames({ limit, ...(after !== undefined ? { after } : {}) });
  }
}

/**
 * Waiters register in the store so that every instance, the CLI and the dashboard can count them:
 * as a lease on a companion key (a control character cannot occur in a user's key, so it never
 * collides), taken only once a waiter has waited WAITER_REGISTER_AFTER_MS — a quick handoff costs
 * no extra store write — renewed while it waits, released when it stops waiting. A waiter that
 * dies uncounted lapses with its registration after WAITER_TTL_MS. Registration is best effort and
 * never delays or fails the acquire.
 */
const waitersKey = (key: string) => `${key}\u001fwaiters`;
const WAITER_REGISTER_AFTER_MS = 100;
const WAITER_TTL_MS = 15_000;
const WAITER_SLOTS = 10_000;

class WaiterRegistration {
  private readonly key: string;
  private token: Promise<string | null> = Promise.resolve(null);
  private refresh: NodeJS.Timeout | undefined;
  private readonly start: NodeJS.Timeout;
  private ended = false;
  private ending: Promise<void> = Promise.resolve();

  constructor(
    private readonly store: LockBackend,
    key: string,
  ) {
    this.key = waitersKey(key);
    this.start = setTimeout(() => {
      this.token = this.register();
      this.refresh = setInterval(() => void this.renew(), WAITER_TTL_MS / 3).unref();
    }, WAITER_REGISTER_AFTER_MS).unref();
  }

  private register(): Promise<string | null> {
    return this.store.tryAcquire(this.key, WAITER_SLOTS, WAITER_TTL_MS).then(
      (grant) => grant?.token ?? null,
      () => null,
    );
  }

  private async renew(): Promise<void> {
    const token = await this.token;
    if (this.ended) return;
    const renewed = token
      ? await this.store.renew(this.key, token, WAITER_TTL_MS).then(
          () => true,
          () => false,
        )
      : false;
    if (!renewed && !this.ended) this.token = this.register();
  }

  /** Idempotent; resolves once the registration is released (never rejects). */
  end(): Promise<void> {
    if (!this.ended) {
      this.ended = true;
      clearTimeout(this.start);
      clearInterval(this.refresh);
      this.ending = this.token
        .then((token) => (token ? this.store.release(this.key, token) : undefined))
        .catch(() => undefined);
    }
    return this.ending;
  }
}

/**
 * Fair waiting (FIFO across instances): a waiter whose first attempt fails takes a ticket — a
 * lease on the key's line, a companion key whose fence is the store's per-key sequence — renews
 * it while it waits and presents it on every attempt; the store grants only when no live ticket
 * ahead of it remains, and removes the ticket in that same step. A waiter that gives up (timeout,
 * abort) removes its ticket; one that dies stops blocking the line when its ticket lapses
 * (FAIR_TICKET_TTL_MS). A waiter whose ticket lapsed (renewals starved) takes a new one at the end
 * of the line. Fair waiters are counted from the line, so they skip WaiterRegistration.
 */
export const fairQueueKey = (key: string) => `${key}\u001fline`;
export const FAIR_TICKET_TTL_MS = 10_000;
const FAIR_LINE_SLOTS = 1_000_000;

async function acquireFair(
  store: LockBackend,
  k: string,
  n: number,
  ttlMs: number,
  deadline: number,
  waitMs: number,
  signal: AbortSignal | undefined,
): Promise<Lease> {
  const line = fairQueueKey(k);
  let ticket: FairTicket | undefined;
  try {
    return await waitForLease(
      store,
      k,
      { deadline, waitMs, signal },
      async () => {
        const sentAt = performance.now();
        const grant = await store.tryAcquireFair(k, n, ttlMs, line, ticket && !ticket.lost ? ticket.token : null);
        if (grant) ticket?.granted(); // the grant took the ticket out of the line, in the store
        const lease = grant && anchored(store, k, n, grant, ttlMs, sentAt, ticket?.number);
        if (grant && !lease) ticket = undefined; // granted too late to count on: line up again
        return lease;
      },
      async () => {
        if (ticket && !ticket.lost) return false;
        await ticket?.end();
        ticket = await FairTicket.take(store, line);
        if (!ticket) throw lockTimeout(k, waitMs); // a million waiters in line
        return true; // try at once with the ticket: the slot may be free and the line empty
      },
    );
  } finally {
    await ticket?.end();
  }
}

class FairTicket {
  lost = false;
  private done = false;
  private readonly refresh: NodeJS.Timeout;

  private constructor(
    private readonly store: LockBackend,
    private readonly line: string,
    readonly token: string,
    readonly number: number,
  ) {
    this.refresh = setInterval(() => {
      void this.store.renew(this.line, this.token, FAIR_TICKET_TTL_MS).catch(() => {
        if (!this.done) this.lost = true;
      });
    }, FAIR_TICKET_TTL_MS / 3).unref();
  }

  static async take(store: LockBackend, line: string): Promise<FairTicket | undefined> {
    const grant = await store.tryAcquire(line, FAIR_LINE_SLOTS, FAIR_TICKET_TTL_MS);
    return grant ? new FairTicket(store, line, grant.token, grant.fence) : undefined;
  }

  /** The grant removed the ticket from the line in its own atomic step. */
  granted(): void {
    this.done = true;
    clearInterval(this.refresh);
  }

  /** Leaves the line (best effort: a ticket that cannot be removed lapses by itself). */
  async end(): Promise<void> {
    if (this.done) return;
    this.done = true;
    clearInterval(this.refresh);
    await this.store.release(this.line, this.token).catch(() => undefined);
  }
}

/** TTL of a lease acquired without `ttlMs`. */
const DEFAULT_TTL_MS = 30_000;

/**
 * When this process may count on a lease until, on its own monotonic clock (performance.now()).
 * The store's expiry is at least `validForMs` after the store granted, and the store granted after
 * the request was sent — so `sentAt + validForMs` is never later than the store's expiry, whatever
 * the reply's latency, a network stall or a blocked event loop cost on the way back. A margin of
 * 2% (5 ms to 1 s) more covers a timer that fires a little late and clock-rate differences
 * between this host and the store's; a loop blocked past the deadline still fires late — that is
 * what fences are for.
 */
interface Anchor {
  sentAt: number;
  validForMs: number;
  deadline: number;
}
const ANCHORS = new WeakMap<Lease, Anchor>();
const safetyMargin = (validForMs: number) => Math.min(1000, Math.max(5, Math.floor(validForMs * 0.02)));

/**
 * The lease for a store grant answered to a request sent at `sentAt`, with `validForMs` counted
 * from now up to the anchored deadline; null (and the grant released, best effort) when the reply
 * came back too late to leave any validity: the store may already have given the slot away.
 */
function anchored(
  store: LockBackend,
  key: string,
  limit: number,
  grant: LeaseGrant,
  ttlMs: number,
  sentAt: number,
  ticket?: number,
): Lease | null {
  const deadline = sentAt + grant.validForMs - safetyMargin(grant.validForMs);
  const left = Math.floor(deadline - performance.now());
  if (left <= 0) {
    void store.release(key, grant.token).catch(() => undefined);
    return null;
  }
  const lease: Lease = {
    ...toLease(key, limit, grant, ttlMs),
    validForMs: left,
    ...(ticket !== undefined ? { ticket } : {}),
  };
  ANCHORS.set(lease, { sentAt, validForMs: grant.validForMs, deadline });
  return lease;
}

/** A lease from elsewhere (built by hand): counted from now, as the best this process knows. */
function anchorOf(lease: Lease): Anchor {
  return (
    ANCHORS.get(lease) ?? {
      sentAt: performance.now(),
      validForMs: lease.validForMs,
      deadline: performance.now() + lease.validForMs,
    }
  );
}

/**
 * A lease's token is the store's owner token + `.` + the TTL the lease was acquired with, so a
 * renewal without `ttlMs` — from this process, another instance, the HTTP API or the CLI, which
 * only have the token — extends the lease by its own TTL rather than by a fixed default. Store
 * tokens are base64url (never a `.`); the suffix grants nothing: any holder may pass `ttlMs` anyway.
 */
function toLease(key: string, limit: number, grant: LeaseGrant, ttlMs: number): Lease {
  return { key, limit, ...grant, token: `${grant.token}.${ttlMs}`, ttlMs };
}

function splitToken(token: string): { storeToken: string; ttlMs?: number } {
  const match = /^([^.]+)\.(\d{1,9})$/.exec(token);
  return match ? { storeToken: match[1]!, ttlMs: Number(match[2]) } : { storeToken: token };
}
