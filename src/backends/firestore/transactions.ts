/**
 * Transactions with dibs' own retry loop. The client's built-in retry (5 attempts) is far too
 * short for a pool under contention and would re-run the body with the candidates chosen before
 * the first attempt; here every attempt runs `body` afresh (so a claim re-queries its candidates),
 * aborted attempts back off with jitter, and every attempt is counted — the benchmark reports
 * transaction attempts per claim.
 *
 * A commit whose outcome is unknown (the RPC failed with UNAVAILABLE, DEADLINE_EXCEEDED, UNKNOWN,
 * INTERNAL… after it may have reached the server) is never run again blindly: the attempt's body
 * may register a resolver (`attempt.resolveWith`) that reads back what the attempt wrote and answers
 * committed (its answer is returned) or certainly-not-committed (the body runs again); without
 * one, or when the resolver cannot tell, the caller gets `unavailable` with `details.ambiguous`.
 * For that the client must not re-send a failed Commit itself (its default for UNAVAILABLE): the
 * re-sent commit of a transaction that did apply fails as "invalid or closed", a failed
 * precondition or an existing document, which looked like contention and re-ran the body, and a
 * re-sent commit of blind writes (an increment) applied twice. `disableCommitRetry` turns that off
 * for every commit that has no retry codes of its own (transactions' commits).
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import type {
  DocumentData,
  DocumentReference,
  DocumentSnapshot,
  Firestore,
  Timestamp,
  Transaction,
  UpdateData,
} from '@google-cloud/firestore';
import { DibsError } from '../../core/errors.js';
import { noteStoreRetry } from '../../tracing/retries.js';

/** gRPC status codes the Firestore client reports as `error.code`. */
export const GRPC = {
  CANCELLED: 1,
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  DEADLINE_EXCEEDED: 4,
  NOT_FOUND: 5,
  ALREADY_EXISTS: 6,
  RESOURCE_EXHAUSTED: 8,
  FAILED_PRECONDITION: 9,
  ABORTED: 10,
  INTERNAL: 13,
  UNAVAILABLE: 14,
} as const;

/**
 * Returned by a transaction body to ask for another attempt (e.g. every candidate was taken
 * meanwhile). A body returns it only before it has written anything that a repeat would double.
 */
export const RETRY = Symbol('retry');

/** What a resolver learnt about an attempt whose commit's outcome was unknown. */
export type Verdict<T> =
  /** It committed; `value` replaces the body's answer when given (e.g. a lease's validity, measured again). */
  | { committed: true; value?: T }
  /** It did not commit and never will (or repeating it is harmless): the body runs again. */
  | 'rerun'
  /** Cannot tell: the caller gets `unavailable` (the step may have been applied). */
  | 'unknown';

export type Resolver<T> = () => Promise<Verdict<T>>;

/** One attempt of a transaction, as its body sees it. */
export interface Attempt<T> {
  /** 1 for the first attempt. */
  readonly n: number;
  /** Random id of this attempt: a body that resolves an ambiguous commit writes it where its resolver looks. */
  readonly id: string;
  /** How to tell, after a commit whose outcome is unknown, whether this attempt committed. */
  resolveWith(resolver: Resolver<T>): void;
}

/** How long a caller should wait before retrying a step whose outcome was unknown (ms). */
const AMBIGUOUS_RETRY_AFTER_MS = 1000;

export function ambiguousCommit(cause: unknown, what = 'the commit'): DibsError {
  const message = (cause as Error)?.message ?? String(cause);
  return new DibsError(
    'unavailable',
    `firestore: ${what} failed and its outcome is unknown (it may have been applied): ${message}`,
    {
      retriable: true,
      cause,
      details: { ambiguous: true, retryAfterMs: AMBIGUOUS_RETRY_AFTER_MS },
    },
  );
}

/**
 * A commit that failed after it may have reached the server. A definite refusal (aborted, a failed
 * precondition, an existing or missing document, an invalid or expired transaction, quota) applied
 * nothing; anything else — UNAVAILABLE, DEADLINE_EXCEEDED, UNKNOWN, INTERNAL, CANCELLED, an error
 * without a gRPC code (a broken connection) — may have.
 */
export function isAmbiguousCommitError(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  if (typeof code !== 'number') return true;
  return (
    code === GRPC.UNAVAILABLE ||
    code === GRPC.DEADLINE_EXCEEDED ||
    code === GRPC.UNKNOWN ||
    code === GRPC.INTERNAL ||
    code === GRPC.CANCELLED
  );
}

const SERVICE = 'google.firestore.v1.Firestore';
/**
 * A client configuration in which Commit is not retried by the client: no retry codes. (gax reads
 * an override's `retry_codes_name` from the override's own `retry_codes`.)
 */
const NOT_RETRIED = 'dibs_commit_not_retried';

/**
 * Makes `db` leave a failed Commit to dibs (see the header). Commits that pass retry codes of their
 * own (`WriteBatch.commit`, `doc.set`: ABORTED, RESOURCE_EXHAUSTED, UNAVAILABLE) keep them, so
 * dibs' blind writes go through transactions (counters.ts). Needs a client that has not been used
 * yet: its settings freeze at first use.
 */
export function disableCommitRetry(db: Firestore): void {
  type ServiceConfig = {
    retry_codes?: Record<string, string[]>;
    methods?: Record<string, { retry_codes_name?: string }>;
  };
  const settings = (db as unknown as { _settings?: { clientConfig?: { interfaces?: Record<string, ServiceConfig> } } })
    ._settings;
  if (settings?.clientConfig?.interfaces?.[SERVICE]?.methods?.Commit?.retry_codes_name === NOT_RETRIED) return;
  const mine = settings?.clientConfig ?? {};
  const interfaces = { ...(mine.interfaces ?? {}) };
  const service = interfaces[SERVICE] ?? {};
  interfaces[SERVICE] = {
    ...service,
    retry_codes: { ...(service.retry_codes ?? {}), [NOT_RETRIED]: [] },
    methods: {
      ...(service.methods ?? {}),
      Commit: { ...(service.methods?.Commit ?? {}), retry_codes_name: NOT_RETRIED },
    },
  };
  try {
    db.settings({ clientConfig: { ...mine, interfaces } });
  } catch (error) {
    throw new DibsError(
      'invalid_input',
      "firestore: dibs needs a Firestore client that has not been used yet (it turns off the client's own retry of Commit)",
      { cause: error },
    );
  }
}

export interface TxCounters {
  /** Transactions that finished (committed or answered). */
  transactions: number;
  /** Attempts, including aborted and retried ones. */
  attempts: number;
}

/**
 * How long a step may keep losing to contention before it answers `unavailable` (retriable)
 * instead of trying again: counted from when the caller asked (`since`: a grouped step from its
 * oldest request, a cart from before it waited for its turns), checked after every lost attempt
 * — so a step answers within this bound plus the attempt in flight, and makes at least one
 * attempt however long it waited. Every transaction of the Firestore backend runs here (and the
 * compare-and-set loops of service.ts use the same bound), so none retries forever: at 80 carts in
 * 4 processes (issue #27) every attempt of every cart and buy was aborted by the emulator's lock
 * timeout, and the old bound of 120 s, checked between attempts, left each caller waiting that
 * long, one after another, for minutes.
 */
export const CONTENTION_DEADLINE_MS = 30_000;
/** And at most this many attempts (a cheap attempt that keeps losing). */
const MAX_ATTEMPTS = 200;

/** The answer of a step that gave up on contention: nothing of it was committed, so it is safe to retry. */
export function contended(attempts: number, since: number, bound = CONTENTION_DEADLINE_MS): DibsError {
  return new DibsError(
    'unavailable',
    `firestore: gave up after ${attempts} contended attempts in ${Date.now() - since} ms (the bound is ${bound} ms)`,
    { retriable: true, details: { retryAfterMs: 1000 } },
  );
}

/**
 * The pause before another attempt of a step that lost attempt `attempt` (jittered, growing), or
 * null when the step must give up instead: that many attempts, or a pause that would end past
 * `deadlineMs` counted from `since`. Shared by TxRunner and the loops that retry without it
 * (counters.ts), so every retry of the backend stops at the same bound.
 */
export function backOff(attempt: number, since: number, deadlineMs = CONTENTION_DEADLINE_MS): number | null {
  const pause = Math.random() * Math.min(5 * 2 ** Math.min(attempt, 7), 500);
  return attempt >= MAX_ATTEMPTS || Date.now() + pause - since > deadlineMs ? null : pause;
}

/**
 * Documents read with plain reads, read again: true when each still has the update time read
 * (both missing counts as unchanged). The guard of a judgement that writes nothing — a refusal —
 * which no commit checks (carts.ts, sale-queue.ts): every change to what it judged writes these
 * documents, so unchanged means the state judged is the state now.
 */
export async function stillAsRead(read: readonly DocumentSnapshot[]): Promise<boolean> {
  if (read.length === 0) return true;
  const again = await read[0]!.ref.firestore.getAll(...read.map((snap) => snap.ref));
  return again.every((snap, i) => {
    const before = read[i]!.updateTime;
    return before === undefined ? snap.updateTime === undefined : snap.updateTime?.isEqual(before) === true;
  });
}

export class TxRunner {
  readonly counters: TxCounters = { transactions: 0, attempts: 0 };

  constructor(
    private readonly db: Firestore,
    /** CONTENTION_DEADLINE_MS; shorter in a test that waits for it. Read by the loops that retry outside `run`. */
    readonly deadlineMs = CONTENTION_DEADLINE_MS,
  ) {}

  /**
   * Runs `body` in a read-write transaction until it commits; `RETRY` or an abort runs it again.
   * `optimistic`: the body reads (some documents) outside the transaction and guards its writes of
   * them with preconditions (an update time, or `create` for a document that did not exist); a
   * commit refused for a failed precondition is contention too, and runs it again. A commit whose
   * outcome is unknown runs it again only if the attempt's resolver says it did not commit (see
   * the header); committed, the attempt's answer is returned; else `unavailable` (ambiguous).
   */
  async run<T>(
    body: (tx: Transaction, attempt: number, step: Attempt<NoInfer<T>>) => Promise<T | typeof RETRY>,
    onRetry?: (attempt: number) => void,
    /** `since`: when the caller asked (default: now), the start of CONTENTION_DEADLINE_MS. */
    options: { optimistic?: boolean; since?: number } = {},
  ): Promise<T> {
    const started = options.since ?? Date.now();
    for (let attempt = 1; ; attempt++) {
      this.counters.attempts++;
      let result: T | typeof RETRY;
      let committing = false;
      let answer: T | typeof RETRY = RETRY;
      let resolver: Resolver<T> | undefined;
      const step: Attempt<T> = {
        n: attempt,
        id: randomBytes(12).toString('base64url'),
        resolveWith: (r) => void (resolver = r),
      };
      try {
        result = await this.db.runTransaction(
          async (tx) => {
            answer = await body(tx, attempt, step);
            committing = true;
            return answer;
          },
          { maxAttempts: 1 },
        );
      } catch (error) {
        if (committing && isAmbiguousCommitError(error)) {
          // Never a blind re-run: only a resolver that read back what this attempt wrote decides.
          // A body that asked for RETRY wrote nothing a repeat would double.
          const verdict = answer === RETRY ? 'rerun' : resolver ? await settle(resolver) : 'unknown';
          if (verdict === 'unknown') {
            this.counters.transactions++;
            throw ambiguousCommit(error);
          }
          if (verdict !== 'rerun') {
            this.counters.transactions++;
            return 'value' in verdict ? (verdict.value as T) : (answer as T);
          }
          result = RETRY;
        } else {
          const code = (error as { code?: unknown })?.code;
          // a guarded update whose document moved (or was deleted), or a create whose document appeared meanwhile
          const preconditionFailed =
            options.optimistic === true &&
            committing &&
            (code === GRPC.FAILED_PRECONDITION || code === GRPC.NOT_FOUND || code === GRPC.ALREADY_EXISTS);
          if (!preconditionFailed && !isContention(error)) throw error;
          result = RETRY;
        }
      }
      if (result !== RETRY) {
        this.counters.transactions++;
        return result;
      }
      onRetry?.(attempt);
      noteStoreRetry();
      // no back-off that would end past the bound
      const pause = backOff(attempt, started, this.deadlineMs);
      if (pause === null) {
        this.counters.transactions++;
        throw contended(attempt, started, this.deadlineMs);
      }
      await sleep(pause);
    }
  }

  /** A read-only transaction (no locks, no contention). */
  async read<T>(body: (tx: Transaction) => Promise<T>): Promise<T> {
    return this.db.runTransaction((tx) => body(tx), { readOnly: true });
  }

  /**
   * A read-only snapshot pinned to an explicit server read time, the one a read of `anchor`
   * returned. Real Firestore isolates every read-only transaction; the emulator does not unless it
   * is given a read time: its queries see commits still being applied, and an audit saw one
   * commit's order without the same commit's counter update. Measured with 4 writers each
   * committing a counter increment and two documents: 19 of 292 unpinned snapshots showed half a
   * commit, 0 of 265 pinned ones. Pinning costs one document read, so the audits, which promise one
   * consistent snapshot, pin; live reads, which show the newest state, do not.
   */
  async snapshot<T>(anchor: DocumentReference, body: (tx: Transaction) => Promise<T>): Promise<T> {
    const { readTime } = await anchor.get();
    return this.db.runTransaction((tx) => body(tx), { readOnly: true, readTime });
  }
}

/**
 * An attempt that lost to another transaction: ABORTED, or — as the emulator reports a transaction
 * it has already rolled back (lock wait exceeded, wounded by an older one) — "Transaction is
 * invalid or closed" / "transaction has expired". Nothing of such an attempt was committed.
 */
export function isContention(error: unknown): boolean {
  const code = (error as { code?: unknown })?.code;
  const message = (error as Error)?.message ?? '';
  if (code === GRPC.ABORTED) return true;
  return (
    (code === GRPC.INVALID_ARGUMENT || code === GRPC.FAILED_PRECONDITION) &&
    /transaction (is invalid or closed|has expired|.*expired)/i.test(message)
  );
}

/**
 * Runs a resolver, again if its reads fail (the store may still be unreachable right after the
 * failed commit), for up to about 10 s; then the outcome stays unknown.
 */
async function settle<T>(resolver: Resolver<T>): Promise<Verdict<T>> {
  const started = Date.now();
  for (let i = 0; ; i++) {
    try {
      return await resolver();
    } catch {
      if (Date.now() - started > 10_000) return 'unknown';
      await sleep(Math.min(100 * 2 ** i, 2000));
    }
  }
}

/** Where an attempt's write shows, and what its commit was conditional on. */
export interface Witness<T> {
  /** A document the attempt's commit writes and is conditional on. */
  ref: DocumentReference;
  /** Its update time as the attempt read it (the commit's precondition); null: the commit creates it. */
  guard: Timestamp | null;
  /** The attempt's effect, if `snap` shows it. */
  mine(snap: DocumentSnapshot): Verdict<T> | null;
  /**
   * The document has moved since `guard` and does not show the effect: the attempt did not commit
   * and never will (its precondition is void) — 'rerun' — unless a later write may have erased
   * the effect ('unknown'). Default 'rerun'.
   */
  moved?(snap: DocumentSnapshot): Verdict<T>;
  /** The fence written when the document is unchanged (default `{ sx: fence id }`). */
  fence?(fenceId: string): UpdateData<DocumentData>;
  /** The fence when the commit would have created the document (none: 'unknown'). */
  placeholder?: DocumentData;
}

/**
 * A resolver from a witness document. It shows the effect: committed. It moved without it: the
 * attempt's commit can no longer apply (its precondition is void). It is still as the attempt read
 * it: the commit did not apply *yet* — a request still in flight might — so a fence is written,
 * conditional on the same update time (or on absence): once it lands the attempt's commit can never
 * apply; if it fails, the document moved meanwhile, and is read again.
 */
export function witnessResolver<T>(w: Witness<T>): Resolver<T> {
  return async () => {
    for (let i = 0; i < 5; i++) {
      const snap = await w.ref.get();
      const seen = w.mine(snap);
      if (seen) return seen;
      const unchanged = w.guard === null ? !snap.exists : snap.exists && snap.updateTime!.isEqual(w.guard);
      if (!unchanged) return w.moved ? w.moved(snap) : 'rerun';
      const fenceId = `fence-${randomBytes(9).toString('base64url')}`;
      try {
        if (w.guard === null) {
          if (!w.placeholder) return 'unknown';
          await w.ref.create(w.placeholder);
        } else {
          await w.ref.update(w.fence ? w.fence(fenceId) : { sx: fenceId }, { lastUpdateTime: w.guard });
        }
        return 'rerun';
      } catch (error) {
        const code = (error as { code?: unknown })?.code;
        if (code !== GRPC.FAILED_PRECONDITION && code !== GRPC.ALREADY_EXISTS && code !== GRPC.NOT_FOUND) throw error;
        // moved meanwhile: read again
      }
    }
    return 'unknown';
  };
}
