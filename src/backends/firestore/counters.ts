/**
 * Sharded exact counters on Firestore: `dibs/{prefix}/counters/{b64(name)}` holds `n` (shards in
 * use, only grows) and its subcollection `shards/{i}` the values. An increment is a blind
 * `FieldValue.increment` of one random shard — no read, so writers never conflict and no single
 * document takes every write (Firestore's sustained write rate per document is limited). When a
 * shard write is refused for contention (ABORTED / RESOURCE_EXHAUSTED), the counter doubles its
 * shards (up to MAX_SHARDS) and the write goes to another shard. The exact value is the sum of
 * every shard document, read in one consistent read-only snapshot.
 *
 * A blind increment cannot be recognised afterwards, so its commit must never be sent twice: it is
 * committed as a transaction without reads (one Commit RPC, which the client does not re-send —
 * `doc.set` would, on UNAVAILABLE, and an applied increment whose answer was lost counted twice).
 * A commit whose outcome is unknown answers `unavailable` (`details.ambiguous`: it may have counted).
 * A refused one (contention) is retried with TxRunner's back-off and within its bound, then
 * answers `unavailable` (retriable: it did not count).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import { noteStoreRetry } from '../../tracing/retries.js';
import type { CounterBackend } from '../../core/locks/backend.js';
import type { CounterValue } from '../../core/locks/types.js';
import type { Page } from '../../core/types.js';
import { encodeId, type Layout } from './layout.js';
import { FieldValue } from './records.js';
import {
  ambiguousCommit,
  backOff,
  contended,
  GRPC,
  isAmbiguousCommitError,
  isContention,
  type TxRunner,
} from './transactions.js';

export const MAX_COUNTER_SHARDS = 64;
const INITIAL = 4;

export class FirestoreCounters implements CounterBackend {
  constructor(
    private readonly layout: Layout,
    private readonly runner: TxRunner,
  ) {}

  private ref(name: string) {
    return this.layout.root.collection('counters').doc(encodeId(name));
  }

  async incr(name: string, by: number): Promise<CounterValue> {
    const ref = this.ref(name);
    // no head document until the counter first grows: a new counter starts with INITIAL shards
    const head = await ref.get();
    let n = Number(head.get('n') ?? INITIAL);
    // the head names the counter for listNames; written blind (no read in the transaction) while missing
    const named = head.get('name') !== undefined;
    // bounded as TxRunner's steps are (CONTENTION_DEADLINE_MS, or the runner's own bound): a write
    // that keeps being refused answers `unavailable` (retriable: nothing was counted), never the
    // driver's error
    const since = Date.now();
    for (let attempt = 1; ; attempt++) {
      try {
        const shard = ref.collection('shards').doc(String(Math.floor(Math.random() * n)));
        await this.layout.db.runTransaction(
          async (tx) => {
            tx.set(shard, { v: FieldValue.increment(by) }, { merge: true });
            if (!named) tx.set(ref, { name }, { merge: true });
          },
          { maxAttempts: 1 },
        );
        break;
      } catch (error) {
        if (isAmbiguousCommitError(error)) throw ambiguousCommit(error, 'the increment');
        const code = (error as { code?: unknown }).code;
        if (!(isContention(error) || code === GRPC.RESOURCE_EXHAUSTED || code === GRPC.ABORTED)) throw error;
        const pause = backOff(attempt, since, this.runner.deadlineMs);
        if (pause === null) throw contended(attempt, since, this.runner.deadlineMs);
        noteStoreRetry();
        n = Math.min(n * 2, MAX_COUNTER_SHARDS);
        await ref.set({ name, n }, { merge: true }).catch(() => {});
        await sleep(pause);
      }
    }
    return this.get(name);
  }

  async get(name: string): Promise<CounterValue> {
    const ref = this.ref(name);
    return this.runner.read(async (tx) => {
      const [head, shards] = await Promise.all([tx.get(ref), tx.get(ref.collection('shards'))]);
      const value = shards.docs.reduce((sum, d) => sum + Number(d.get('v') ?? 0), 0);
      return { name, value, shards: Number(head.get('n') ?? INITIAL) };
    });
  }

  /**
   * Counters in name order: a query on the head documents' `name` (automatic single-field index).
   * A head is written by a counter's first increment (a counter incremented only before heads were
   * named is listed from its next increment); a reset deletes it.
   */
  async listNames({ limit, after }: { limit: number; after?: string }): Promise<Page<string>> {
    let query = this.layout.root
      .collection('counters')
      .orderBy('name')
      .select('name')
      .limit(limit + 1);
    if (after !== undefined) query = query.startAfter(after);
    const names = (await query.get()).docs.map((d) => d.get('name') as string);
    const items = names.slice(0, limit);
    return { items, nextCursor: names.length > limit ? items.at(-1)! : null };
  }

  async reset(name: string): Promise<void> {
    await this.layout.db.recursiveDelete(this.ref(name));
  }
}
