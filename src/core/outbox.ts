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
}
