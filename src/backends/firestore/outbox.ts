/**
 * Outbox delivery on Firestore. Every event (pools' and sales') is one document of
 * `dibs/{prefix}/events`, written in the same transaction as the change it reports
 * (records.ts writeEvent) with its delivery state on it:
 *
 *   p  creation (ms), present while the event is pending   — the lag: `orderBy(p).limit(1)`
 *   d  when it is due (ms): its creation, the end of its lease or its next retry; present while
 *      pending — claimDue: `orderBy(d).limit(n)`, due = `d ≤ the query's read time`
 *   a  attempts so far; x  'd' delivered / 'x' dead; log  one entry per attempt
 *
 * A delivered or dead event loses `p` and `d`, so it leaves both indexes. Each call is one
 * transaction (claimDue's query runs inside it, so two dispatchers never lease the same event:
 * the loser's transaction is aborted and retried), on the server's clock.
 */
import type { Transaction } from '@google-cloud/firestore';
import { DibsError } from '../../core/errors.js';
import type {
  DeadLetter,
  DeliveryRecord,
  DueEvent,
  OutboxBackend,
  OutboxStatus,
  RetryOutcome,
} from '../../core/outbox.js';
import type { Layout } from './layout.js';
import { EVENT_ID, iso, type Timestamp } from './records.js';
import type { TxRunner } from './transactions.js';

interface DeliveryState {
  type: string;
  key: string;
  payload: Record<string, unknown>;
  at: Timestamp;
  p?: number;
  d?: number;
  a?: number;
  x?: 'd' | 'x';
  log?: { attempt: number; ok: boolean; detail: string; at: number }[];
}

export class FirestoreOutbox implements OutboxBackend {
  constructor(
    private readonly layout: Layout,
    private readonly runner: TxRunner,
  ) {}

  async claimDue(limit: number, leaseMs: number): Promise<DueEvent[]> {
    return this.runner.run(async (tx) => {
      const page = await tx.get(this.layout.events.orderBy('d').limit(limit));
      const now = page.readTime.toMillis();
      const due = page.docs.filter((d) => (d.get('d') as number) <= now);
      for (const doc of due) tx.update(doc.ref, { d: now + leaseMs });
      return due
        .map((doc) => {
          const e = doc.data() as DeliveryState;
          return {
            id: doc.id,
            type: e.type,
            idempotencyKey: e.key,
            payload: e.payload ?? {},
            createdAt: iso(e.at)!,
            attempts: e.a ?? 0,
          };
        })
        .sort((a, b) => (a.id < b.id ? -1 : 1));
    });
  }

  async markDelivered(id: string, detail: string): Promise<void> {
    await this.settle(id, true, detail, null);
  }

  async markFailed(id: string, detail: string, retryInMs: number | null): Promise<void> {
    await this.settle(id, false, detail, retryInMs);
  }

  /** Records one attempt of a pending event; a delivered, dead or unknown event is left as it is. */
  private async settle(id: string, ok: boolean, detail: string, retryInMs: number | null): Promise<void> {
    const ref = this.layout.events.doc(checkId(id));
    await this.runner.run(async (tx: Transaction) => {
      const snap = await tx.get(ref);
      if (!snap.exists) return;
      const e = snap.data() as DeliveryState;
      if (e.x !== undefined || e.p === undefined) return;
      const now = snap.readTime.toMillis();
      const attempt = (e.a ?? 0) + 1;
      const log = [...(e.log ?? []), { attempt, ok, detail, at: now }];
      const { p: _p, d: _d, ...rest } = e;
      if (ok) tx.set(ref, { ...rest, a: attempt, log, x: 'd' });
      else if (retryInMs === null) tx.set(ref, { ...rest, a: attempt, log, x: 'x' });
      else tx.set(ref, { ...e, a: attempt, log, d: now + Math.max(0, Math.round(retryInMs)) });
    });
  }

  async deliveries(id: string): Promise<DeliveryRecord[]> {
    const snap = await this.layout.events.doc(checkId(id)).get();
    const log = (snap.get('log') as DeliveryState['log']) ?? [];
    return log.map((d) => ({ attempt: d.attempt, ok: d.ok, detail: d.detail, at: new Date(d.at).toISOString() }));
  }

  async status(): Promise<OutboxStatus> {
    const events = this.layout.events;
    const [pending, delivered, dead, oldest] = await this.runner.read((tx) =>
      Promise.all([
        tx.get(events.where('p', '>=', 0).count()),
        tx.get(events.where('x', '==', 'd').count()),
        tx.get(events.where('x', '==', 'x').count()),
        tx.get(events.orderBy('p').limit(1)),
      ]),
    );
    const first = oldest.docs[0]?.get('p') as number | undefined;
    return {
      pending: pending.data().count,
      delivered: delivered.data().count,
      dead: dead.data().count,
      oldestPendingMs: first === undefined ? 0 : Math.max(0, oldest.readTime.toMillis() - first),
    };
  }

  /**
   * Dead letters by the single-field index on `x` (no composite index to deploy), so in event id
   * order: up to 500 are read and the newest dead are kept.
   */
  async deadLetters(limit: number): Promise<DeadLetter[]> {
    const page = await this.layout.events.where('x', '==', 'x').limit(500).get();
    return page.docs
      .map((doc) => {
        const e = doc.data() as DeliveryState;
        const last = e.log?.at(-1);
        return {
          id: doc.id,
          type: e.type,
          createdAt: iso(e.at)!,
          attempts: e.a ?? 0,
          lastError: last?.detail ?? '',
          deadAt: new Date(last?.at ?? 0).toISOString(),
        };
      })
      .sort((a, b) => (a.deadAt < b.deadAt ? 1 : a.deadAt > b.deadAt ? -1 : 0))
      .slice(0, limit);
  }

  /**
   * A dead event gets its pending fields back (`p` its creation, `d` now); a waiting one is due
   * now. A lease and a back-off both look like a later `d`, so an event being delivered right
   * now is made due again too (at least once still holds: receivers dedupe on the key).
   */
  async retryNow(id: string): Promise<RetryOutcome> {
    const ref = this.layout.events.doc(checkId(id));
    return this.runner.run(async (tx: Transaction): Promise<RetryOutcome> => {
      const snap = await tx.get(ref);
      if (!snap.exists) return 'missing';
      const e = snap.data() as DeliveryState;
      if (e.x === 'd') return 'delivered';
      const now = snap.readTime.toMillis();
      const { x: _x, ...rest } = e;
      tx.set(ref, { ...rest, p: e.p ?? e.at.toMillis(), d: now });
      return 'queued';
    });
  }
}

function checkId(id: string): string {
  if (!EVENT_ID.test(id)) throw new DibsError('invalid_input', `'${id}' is not an event id`, { field: 'id' });
  return id;
}
