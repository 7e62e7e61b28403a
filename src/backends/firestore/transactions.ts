/**
 * Transactions with dibs' own retry loop. The client's built-in retry (5 attempts) is far too
 * short for a pool under contention and would re-run the body with the candidates chosen before
 * the first attempt; here every attempt runs `body` afresh (so a claim re-queries its candidates),
 * aborted attempts back off with jitter, and every attempt is counted — the benchmark reports
 * transaction attempts per claim.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { DocumentReference, Firestore, Transaction } from '@google-cloud/firestore';
import { DibsError } from '../../core/errors.js';

/** gRPC status codes the Firestore client reports as `error.code`. */
export const GRPC = { INVALID_ARGUMENT: 3, DEADLINE_EXCEEDED: 4, NOT_FOUND: 5, ALREADY_EXISTS: 6, FAILED_PRECONDITION: 9, ABORTED: 10, UNAVAILABLE: 14 } as const;

/** Returned by a transaction body to ask for another attempt (e.g. every candidate was taken meanwhile). */
export const RETRY = Symbol('retry');

export interface TxCounters {
  /** Transactions that finished (committed or answered). */
  transactions: number;
  /** Attempts, including aborted and retried ones. */
  attempts: number;
}

const MAX_ATTEMPTS = 200;
const MAX_TOTAL_MS = 120_000;

export class TxRunner {
  readonly counters: TxCounters = { transactions: 0, attempts: 0 };

  constructor(private readonly db: Firestore) {}

  /**
   * Runs `body` in a read-write transaction until it commits; `RETRY` or an abort runs it again.
   * `optimistic`: the body reads (some documents) outside the transaction and guards its writes of
   * them with preconditions (an update time, or `create` for a document that did not exist); a
   * commit refused for a failed precondition is contention too, and runs it again.
   */
  async run<T>(body: (tx: Transaction, attempt: number) => Promise<T | typeof RETRY>, onRetry?: (attempt: number) => void, options: { optimistic?: boolean } = {}): Promise<T> {
    const started = Date.now();
    for (let attempt = 1; ; attempt++) {
      this.counters.attempts++;
      let result: T | typeof RETRY;
      let committing = false;
      try {
        result = await this.db.runTransaction(
          async (tx) => {
            const value = await body(tx, attempt);
            committing = true;
            return value;
          },
          { maxAttempts: 1 },
        );
      } catch (error) {
        const code = (error as { code?: unknown })?.code;
        // a guarded update whose document moved (or was deleted), or a create whose document appeared meanwhile
        const preconditionFailed = options.optimistic === true && committing && (code === GRPC.FAILED_PRECONDITION || code === GRPC.NOT_FOUND || code === GRPC.ALREADY_EXISTS);
        if (!preconditionFailed && !isContention(error)) throw error;
        result = RETRY;
      }
      if (result !== RETRY) {
        this.counters.transactions++;
        return result;
      }
      onRetry?.(attempt);
      if (attempt >= MAX_ATTEMPTS || Date.now() - started > MAX_TOTAL_MS) {
        this.counters.transactions++;
        throw new DibsError('unavailable', `firestore: gave up after ${attempt} contended transaction attempts`, { retriable: true });
      }
      const ceiling = Math.min(5 * 2 ** Math.min(attempt, 7), 500);
      await sleep(Math.random() * ceiling);
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
  return (code === GRPC.INVALID_ARGUMENT || code === GRPC.FAILED_PRECONDITION) && /transaction (is invalid or closed|has expired|.*expired)/i.test(message);
}
