/**
 * Outbox delivery on PostgreSQL: dispatchers in any number of processes lease disjoint batches
 * (FOR UPDATE SKIP LOCKED plus a lease time, so a crashed dispatcher's events come due again),
 * and every attempt is written in the same statement as the event's new state.
 */
import type pg from 'pg';
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
import { query } from './connection.js';

const Q = loadQueries(new URL('./outbox.sql', import.meta.url), [
  'claimDue',
  'markDelivered',
  'markFailed',
  'deliveries',
  'status',
  'deadLetters',
  'retryNow',
]);

export class PgOutbox implements OutboxBackend {
  constructor(private readonly pool: pg.Pool) {}

  async claimDue(limit: number, leaseMs: number): Promise<DueEvent[]> {
    const { rows } = await query<{
      id: string;
      type: string;
      idempotency_key: string;
      payload: Record<string, unknown>;
      created_at: Date;
      attempts: number;
    }>(this.pool, Q.claimDue, [limit, leaseMs]);
    return rows
      .sort((a, b) => Number(a.id) - Number(b.id))
      .map((e) => ({
        id: e.id,
        type: e.type,
        idempotencyKey: e.idempotency_key,
        payload: e.payload,
        createdAt: e.created_at.toISOString(),
        attempts: e.attempts,
      }));
  }

  async markDelivered(id: string, detail: string): Promise<void> {
    await query(this.pool, Q.markDelivered, [eventId(id), detail]);
  }

  async markFailed(id: string, detail: string, retryInMs: number | null): Promise<void> {
    await query(this.pool, Q.markFailed, [eventId(id), detail, retryInMs]);
  }

  async deliveries(id: string): Promise<DeliveryRecord[]> {
    const { rows } = await query<{ attempt: number; ok: boolean; detail: string; at: Date }>(this.pool, Q.deliveries, [
      eventId(id),
    ]);
    return rows.map((d) => ({ attempt: d.attempt, ok: d.ok, detail: d.detail, at: d.at.toISOString() }));
  }

  async status(): Promise<OutboxStatus> {
    const s = (
      await query<{ pending: number; delivered: number; dead: number; oldest_ms: string }>(this.pool, Q.status)
    ).rows[0]!;
    return {
      pending: s.pending,
      delivered: s.delivered,
      dead: s.dead,
      oldestPendingMs: Math.max(0, Number(s.oldest_ms)),
    };
  }

  async deadLetters(limit: number): Promise<DeadLetter[]> {
    const { rows } = await query<{
      id: string;
      type: string;
      created_at: Date;
      attempts: number;
      last_error: string;
      dead_at: Date;
    }>(this.pool, Q.deadLetters, [limit]);
    return rows.map((e) => ({
      id: e.id,
      type: e.type,
      createdAt: e.created_at.toISOString(),
      attempts: e.attempts,
      lastError: e.last_error,
      deadAt: e.dead_at.toISOString(),
    }));
  }

  async retryNow(id: string): Promise<RetryOutcome> {
    const { rows } = await query<{ outcome: RetryOutcome }>(this.pool, Q.retryNow, [eventId(id)]);
    return rows[0]?.outcome ?? 'missing';
  }
}

function eventId(id: string): string {
  if (!/^\d{1,18}$/.test(id)) throw new DibsError('invalid_input', `'${id}' is not an event id`, { field: 'id' });
  return id;
}
