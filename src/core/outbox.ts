/**
 * The outbox: events recorded in the same atomic step as the state change that caused them
 * (I7), delivered afterwards at least once by the dispatcher. Consumers dedupe on
 * `idempotencyKey`.
 */
import type { OutboxEvent } from './types.js';

export interface DueEvent extends OutboxEvent {
  /** Delivery attempts made before this one. */
  attempts: number;
}

export interface DeliveryRecord {
  attempt: number;
  ok: boolean;
  detail: string;
  at: string;
}

export interface OutboxStatus {
  pending: number;
  delivered: number;
  dead: number;
  /** Age in ms of the oldest undelivered event (0 when none): the dispatcher's lag. */
  oldestPendingMs: number;
}

/** An event the dispatcher gave up on (its retries spent, or a receiver refused it for good). */
export interface DeadLetter {
  id: string;
  type: string;
  createdAt: string;
  attempts: number;
  /** The last attempt's failure. */
  lastError: string;
  deadAt: string;
}

/**
 * What `retryNow` did: `queued` (the event is due now: the next dispatcher run delivers it),
 * `delivered` (nothing to retry), `leased` (a dispatcher is delivering it right now), `missing`.
 */
export type RetryOutcome = 'queued' | 'delivered' | 'leased' | 'missing';

export interface OutboxBackend {
  /**
   * Leases up to `limit` due, undelivered events for `leaseMs`, oldest first: while leased no
   * other dispatcher (in this or another process) gets them. An expired lease makes them due again.
   */
  claimDue(limit: number, leaseMs: number): Promise<DueEvent[]>;
  markDelivered(id: string, detail: string): Promise<void>;
  /** Records a failed attempt; `retryInMs` null gives up (dead letter). */
  markFailed(id: string, detail: string, retryInMs: number | null): Promise<void>;
  deliveries(id: string): Promise<DeliveryRecord[]>;
  status(): Promise<OutboxStatus>;
  /** The newest dead letters, most recently dead first (at most `limit`). */
  deadLetters(limit: number): Promise<DeadLetter[]>;
  /** Makes a dead or waiting (backed-off) event due now, keeping its attempt count and log. */
  retryNow(id: string): Promise<RetryOutcome>;
}
