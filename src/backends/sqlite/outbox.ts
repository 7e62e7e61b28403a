import { DibsError } from '../../core/errors.js';
import type {
  DeadLetter,
  DeliveryRecord,
  DueEvent,
  OutboxBackend,
  OutboxStatus,
  RetryOutcome,
} from '../../core/outbox.js';
import { loadQueries } from '../shared/sql-files.js';
import { read, write, prepareAll, type Db, type SqliteOptions, type Statements } from './database.js';

const Q = loadQueries(new URL('./outbox.sql', import.meta.url), [
  'now',
  'claimDue',
  'markDelivered',
  'markFailed',
  'insertDelivery',
  'deliveries',
  'status',
  'deadLetters',
  'retryState',
  'retryNow',
]);

export class SqliteOutbox implements OutboxBackend {
  private readonly stmt: Statements<typeof Q>;

  constructor(
    private readonly db: Db,
    private readonly options: SqliteOptions,
  ) {
    this.stmt = prepareAll(db, Q);
  }

  async claimDue(limit: number, leaseMs: number): Promise<DueEvent[]> {
    return write(this.db, this.options, () => {
      const rows = this.stmt.claimDue.all({ limit, leaseMs, now: this.now() }) as {
        id: number;
        type: string;
        idempotency_key: string;
        payload: string;
        created_at: string;
        attempts: number;
      }[];
      return rows
        .sort((a, b) => a.id - b.id)
        .map((e) => ({
          id: String(e.id),
          type: e.type,
          idempotencyKey: e.idempotency_key,
          payload: JSON.parse(e.payload) as Record<string, unknown>,
          createdAt: e.created_at,
          attempts: e.attempts,
        }));
    });
  }

  async markDelivered(id: string, detail: string): Promise<void> {
    await write(this.db, this.options, () => {
      const now = this.now();
      const row = this.stmt.markDelivered.get({ id: eventId(id), now }) as { attempts: number } | undefined;
      if (row) this.stmt.insertDelivery.run({ id: eventId(id), attempt: row.attempts, ok: 1, detail, now });
    });
  }

  async markFailed(id: string, detail: string, retryInMs: number | null): Promise<void> {
    await write(this.db, this.options, () => {
      const now = this.now();
      const row = this.stmt.markFailed.get({ id: eventId(id), detail, retryInMs, now }) as
        | { attempts: number }
        | undefined;
      if (row) this.stmt.insertDelivery.run({ id: eventId(id), attempt: row.attempts, ok: 0, detail, now });
    });
  }

  async deliveries(id: string): Promise<DeliveryRecord[]> {
    return read(this.options, () =>
      (this.stmt.deliveries.all(eventId(id)) as { attempt: number; ok: number; detail: string; at: string }[]).map(
        (d) => ({ attempt: d.attempt, ok: d.ok === 1, detail: d.detail, at: d.at }),
      ),
    );
  }

  async status(): Promise<OutboxStatus> {
    return read(this.options, () => {
      const s = this.stmt.status.get() as { pending: number; delivered: number; dead: number; oldest: string | null };
      return {
        pending: s.pending,
        delivered: s.delivered,
        dead: s.dead,
        oldestPendingMs: s.oldest ? Math.max(0, Date.parse(this.now()) - Date.parse(s.oldest)) : 0,
      };
    });
  }

  async deadLetters(limit: number): Promise<DeadLetter[]> {
    return read(this.options, () =>
      (
        this.stmt.deadLetters.all({ limit }) as {
          id: number;
          type: string;
          created_at: string;
          attempts: number;
          last_error: string;
          dead_at: string;
        }[]
      ).map((e) => ({
        id: String(e.id),
        type: e.type,
        createdAt: e.created_at,
        attempts: e.attempts,
        lastError: e.last_error,
        deadAt: e.dead_at,
      })),
    );
  }

  async retryNow(id: string): Promise<RetryOutcome> {
    return write(this.db, this.options, () => {
      const now = this.now();
      const row = this.stmt.retryState.get(eventId(id)) as
        | { delivered_at: string | null; dead_at: string | null; locked_until: string | null }
        | undefined;
      if (!row) return 'missing';
      if (row.delivered_at !== null) return 'delivered';
      if (row.locked_until !== null && row.locked_until > now) return 'leased';
      this.stmt.retryNow.run({ id: eventId(id), now });
      return 'queued';
    });
  }

  private now(): string {
    return (this.stmt.now.get() as { now: string }).now;
  }
}

function eventId(id: string): number {
  const n = Number(id);
  if (!Number.isSafeInteger(n)) throw new DibsError('invalid_input', `'${id}' is not an event id`, { field: 'id' });
  return n;
}
