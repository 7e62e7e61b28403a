/**
 * Sharded exact counters on Firestore: `dibs/{prefix}/counters/{b64(name)}` holds `n` (shards in
 * use, only grows) and its subcollection `shards/{i}` the values. An increment is a blind
 * `FieldValue.increment` of one random shard — no read, so writers never conflict and no single
 * document takes every write (Firestore's sustained write rate per document is limited). When a
 * shard write is refused for contention (ABORTED / RESOURCE_EXHAUSTED), the counter doubles its
 * shards (up to MAX_SHARDS) and the write goes to another shard. The exact value is the sum of
 * every shard document, read in one consistent read-only snapshot.
 */
import type { CounterBackend } from '../../core/locks/backend.js';
import type { CounterValue } from '../../core/locks/types.js';
import { encodeId, type Layout } from './layout.js';
import { FieldValue } from './records.js';
import { GRPC, isContention, type TxRunner } from './transactions.js';

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
    let n = Number((await ref.get()).get('n') ?? INITIAL);
    for (let attempt = 0; ; attempt++) {
      try {
        await ref.collection('shards').doc(String(Math.floor(Math.random() * n))).set({ v: FieldValue.increment(by) }, { merge: true });
        break;
      } catch (error) {
        const code = (error as { code?: unknown }).code;
        if (attempt >= 20 || !(isContention(error) || code === 8 /* RESOURCE_EXHAUSTED */ || code === GRPC.ABORTED)) throw error;
        n = Math.min(n * 2, MAX_COUNTER_SHARDS);
        await ref.set({ name, n }, { merge: true }).catch(() => {});
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

  async reset(name: string): Promise<void> {
    await this.layout.db.recursiveDelete(this.ref(name));
  }
}
