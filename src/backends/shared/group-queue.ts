/**
 * Opportunistic grouping: requests of one key (a pool, a sale) that wait in this process at the
 * same time are served by ONE round trip of the store — one statement (PostgreSQL claims,
 * claim.sql) or one transaction (Firestore claims, Firestore sale steps) — each judged
 * exactly as if alone, in arrival order. Callers do not notice: each gets its own answer.
 *
 * Why: every round trip and every contended document or index page is paid once per group instead
 * of once per request. On Firestore it is also what keeps a flash crowd from being N transactions
 * colliding on one sale or pool document (aborted and retried, on the emulator for minutes).
 *
 * Batching is opportunistic, never timed: requests issued in the same turn of the event loop
 * (`joinTurn`), or that arrive while `concurrency` groups of their key are already running, form
 * the next group. So an idle process runs a request at once, and a busy one amortises each round
 * trip over up to `max` requests. Nothing waits on a timer.
 *
 * Claims (`identify`) add one rule: a group never holds the same claimant or idempotency key twice
 * (the grouped statement and transaction judge each request against the state before the group, so
 * a repeat would not see the first one's holding); the repeat waits for a later group and sees it.
 * With `holdBack`, a repeat also waits while a group still RUNNING holds its claimant or key: on
 * Firestore two such transactions both read the claimant's holder document and deadlock on writing
 * it, which the emulator resolves only by its lock timeout of about 2 s.
 *
 * Outcomes are per request: the run step answers each request of its group (a refusal is that
 * request's answer, the others still commit); only a failure of the whole statement or transaction
 * (the step throws) rejects the whole group. State is kept per key only while it has requests
 * waiting or groups running: an idle pool or sale leaves nothing behind.
 */

/** A request waiting for its group, and how the run step answers it. */
export interface Waiting<R, V> {
  readonly request: R;
  resolve(value: V): void;
  reject(error: unknown): void;
}

/** Who a claim is for: a group holds each claimant and each idempotency key at most once. */
export interface Identity {
  claimant: string;
  key: string | null;
}

export interface GroupPolicy<R> {
  /** Most requests one group holds (at least 1). */
  max: number;
  /** Groups of one key running at once in this process (at least 1). */
  concurrency: number;
  /**
   * Start a group only at the end of the current turn of the event loop (setImmediate), so that
   * every request issued in this turn joins it (default true). False starts a group as soon as
   * one may run: the first request of an idle key runs alone, the ones behind it group.
   */
  joinTurn?: boolean;
  /** Claims: the claimant and key of a request, which a group holds at most once. */
  identify?: (request: R) => Identity;
  /** With `identify`: a request whose claimant or key is in a running group waits for it to end. */
  holdBack?: boolean;
}

/**
 * Serves one group: answers every request of it (resolve or reject), or throws to fail the ones it
 * has not answered yet. Nothing answers for it afterwards: settling a settled promise again costs
 * (Node queues a 'multipleResolves' report for each: ~10x a plain settle), and this is the claim path.
 */
export type RunGroup<R, V> = (key: string, group: readonly Waiting<R, V>[]) => Promise<void>;

/** The requests and groups of one key; dropped as soon as it has neither. */
interface Lane<R, V> {
  queue: Waiting<R, V>[];
  running: number;
  scheduled: boolean;
  /** With hold-back: claimants and keys of the groups of this key running now. */
  busy: { claimants: Set<string>; keys: Set<string> } | null;
}

export class GroupQueue<R, V> {
  private readonly lanes = new Map<string, Lane<R, V>>();
  private readonly max: number;
  private readonly concurrency: number;
  private readonly joinTurn: boolean;
  private readonly identify: ((request: R) => Identity) | null;
  private readonly holdBack: boolean;
  /** Claimants and keys of the group being taken, when not held back (reused: taking is synchronous). */
  private readonly taking = { claimants: new Set<string>(), keys: new Set<string>() };

  constructor(
    policy: GroupPolicy<R>,
    private readonly runGroup: RunGroup<R, V>,
  ) {
    this.max = Math.max(1, policy.max);
    this.concurrency = Math.max(1, policy.concurrency);
    this.joinTurn = policy.joinTurn ?? true;
    this.identify = policy.identify ?? null;
    this.holdBack = this.identify !== null && (policy.holdBack ?? false);
  }

  /** Queues one request of `key`; settles with its own answer once its group has run. */
  add(key: string, request: R): Promise<V> {
    return new Promise<V>((resolve, reject) => {
      let lane = this.lanes.get(key);
      if (!lane) {
        lane = {
          queue: [],
          running: 0,
          scheduled: false,
          busy: this.holdBack ? { claimants: new Set(), keys: new Set() } : null,
        };
        this.lanes.set(key, lane);
      }
      lane.queue.push({ request, resolve, reject });
      this.kick(key, lane);
    });
  }

  /** Keys with requests waiting or groups running (0 once everything has settled). */
  get activeKeys(): number {
    return this.lanes.size;
  }

  private kick(key: string, lane: Lane<R, V>): void {
    if (!this.joinTurn) {
      this.dispatch(key, lane);
      return;
    }
    if (lane.scheduled) return;
    lane.scheduled = true;
    setImmediate(() => {
      lane.scheduled = false;
      this.dispatch(key, lane);
    });
  }

  private dispatch(key: string, lane: Lane<R, V>): void {
    while (lane.queue.length > 0 && lane.running < this.concurrency) {
      const group = this.take(lane);
      if (group.length === 0) break; // everyone waiting repeats a running group: its end kicks them
      lane.running++;
      let done: Promise<void>;
      try {
        done = this.runGroup(key, group);
      } catch (error) {
        done = Promise.reject(error); // a step that throws before its first await must not keep the slot
      }
      done.then(
        () => this.finished(key, lane, group),
        (error: unknown) => {
          // A settled promise ignores a second answer, so this reaches only the unanswered ones.
          for (const w of group) w.reject(error);
          this.finished(key, lane, group);
        },
      );
    }
    this.dropIfIdle(key, lane);
  }

  /** Frees the place of a group that has ended: its claimants and keys, its slot, its lane. */
  private finished(key: string, lane: Lane<R, V>, group: readonly Waiting<R, V>[]): void {
    if (lane.busy) {
      for (const { request } of group) {
        const { claimant, key: idempotencyKey } = this.identify!(request);
        lane.busy.claimants.delete(claimant);
        if (idempotencyKey !== null) lane.busy.keys.delete(idempotencyKey);
      }
    }
    lane.running--;
    if (lane.queue.length > 0) this.kick(key, lane);
    else this.dropIfIdle(key, lane);
  }

  private dropIfIdle(key: string, lane: Lane<R, V>): void {
    if (lane.queue.length === 0 && lane.running === 0 && !lane.scheduled) this.lanes.delete(key);
  }

  /**
   * Takes the next group off the lane's queue, oldest first: up to `max` requests with pairwise
   * distinct claimants and keys (and, with hold-back, none of a running group's). The ones passed
   * over keep their order at the head of the queue.
   */
  private take(lane: Lane<R, V>): Waiting<R, V>[] {
    const queue = lane.queue;
    if (!this.identify) return queue.splice(0, this.max);
    const seen = lane.busy ?? this.taking;
    const group: Waiting<R, V>[] = [];
    let kept = 0;
    let i = 0;
    for (; i < queue.length && group.length < this.max; i++) {
      const w = queue[i]!;
      const { claimant, key } = this.identify(w.request);
      if (seen.claimants.has(claimant) || (key !== null && seen.keys.has(key))) {
        queue[kept++] = w;
        continue;
      }
      seen.claimants.add(claimant);
      if (key !== null) seen.keys.add(key);
      group.push(w);
    }
    if (kept !== i) queue.splice(kept, i - kept); // what is left between the passed-over and the rest
    if (!lane.busy) {
      this.taking.claimants.clear();
      this.taking.keys.clear();
    }
    return group;
  }
}
