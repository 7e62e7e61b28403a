/**
 * A fair waiting room for a flash sale. Arrivals get a ticket numbered in the order the STORE saw
 * them (a sequence in the same atomic step, never the client's clock). Tickets are admitted
 * strictly in that order, at most `admitPerSecond`, and only while units remain for them:
 * cap − sold − active holds − (admitted tickets not yet used × per-customer limit) > 0. An admitted
 * customer has `windowMs` to reserve; the reservation checks the ticket in the same atomic step as
 * the hold and the per-customer limit. A hold that expires or is cancelled frees units, and the
 * next admission goes to the next ticket in line — not to whoever retries fastest. When the sale
 * is sold out for good, every waiting ticket is told at once.
 *
 * Tickets are bearer tokens bound to (sale, customer, number) by an HMAC with a per-sale secret
 * that never leaves the store: a forged number or another customer's token is refused.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';
import { DibsError } from '../errors.js';
import type { HoldResult } from './types.js';

export type TicketStatus = 'waiting' | 'admitted' | 'used' | 'expired' | 'sold_out';

export interface WaitingRoomSpec {
  /** Tickets admitted per second at most (token bucket, bursts up to one second's worth). */
  admitPerSecond: number;
  /** How long an admitted customer may take to reserve, ms. */
  windowMs: number;
}

export interface WaitingRoom extends WaitingRoomSpec {
  saleId: string;
  createdAt: string;
  /** Tickets by status right now. */
  tickets: Record<TicketStatus, number>;
}

export interface Ticket {
  saleId: string;
  customer: string;
  /** Arrival number, 1-based, in the order the store saw the arrivals. */
  number: number;
  status: TicketStatus;
  /** Waiting tickets ahead of this one (0 once admitted). */
  position: number;
  /** Rough wait until admission at the configured rate, ms (0 once admitted; null when it will never be). */
  estimatedWaitMs: number | null;
  /** Until when an admitted ticket may reserve. */
  admittedUntil: string | null;
  /** The hold made with this ticket. */
  holdId: string | null;
  /** The bearer token: present it (with the customer id) to check the ticket or reserve. */
  token: string;
}

/** The store side. Every step first runs admission for the sale (expiry, rate, capacity, sold-out). */
export interface WaitingRoomBackend {
  /** Sale must exist and be capped. Replaces the settings of an existing room (keeps its tickets). */
  enable(saleId: string, spec: WaitingRoomSpec): Promise<WaitingRoom>;
  get(saleId: string): Promise<WaitingRoom>;
  /** One ticket per customer: joining again returns the existing ticket. */
  join(saleId: string, customer: string): Promise<Ticket>;
  /** The ticket of `customer` if `token` is its genuine token; `invalid_ticket` otherwise. */
  ticket(saleId: string, customer: string, token: string): Promise<Ticket>;
  /**
   * Reserves with an admitted ticket in one atomic step with the hold: `not_admitted` while the
   * ticket waits (or its window passed), `invalid_ticket` for a forged/foreign token. The ticket is
   * then used; a replay of the same reservation returns the same hold.
   */
  reserve(saleId: string, customer: string, token: string, quantity: number, ttlMs: number): Promise<HoldResult>;
}

export const waitingRoomSpecSchema = z
  .object({
    admitPerSecond: z
      .number({ error: 'must be a number' })
      .positive('must be more than 0')
      .max(100_000, 'at most 100000'),
    windowMs: z
      .number({ error: 'must be a number' })
      .int('must be a whole number')
      .min(1000, 'at least 1000 ms')
      .max(3_600_000, 'at most one hour'),
  })
  .strict();

export const ticketTokenSchema = z
  .string({ error: 'must be a string' })
  .regex(/^\d{1,12}\.[A-Za-z0-9_-]{43}$/, 'is not a ticket token');

/** `<number>.<HMAC-SHA256(secret, sale \0 customer \0 number) in base64url>` */
export function signTicket(secret: string, saleId: string, customer: string, number: number): string {
  return `${number}.${createHmac('sha256', secret).update(`${saleId}\u0000${customer}\u0000${number}`).digest('base64url')}`;
}

/** The ticket number a genuine token carries, or `invalid_ticket` (constant-time comparison). */
export function verifyTicket(secret: string, saleId: string, customer: string, token: string): number {
  const number = Number(token.slice(0, token.indexOf('.')));
  const expected = Buffer.from(signTicket(secret, saleId, customer, number));
  const given = Buffer.from(token);
  if (
    !Number.isSafeInteger(number) ||
    number < 1 ||
    expected.length !== given.length ||
    !timingSafeEqual(expected, given)
  ) {
    throw new DibsError('invalid_ticket', `this ticket is not valid for customer '${customer}' in sale '${saleId}'`, {
      field: 'ticket',
    });
  }
  return number;
}

export function notAdmitted(ticket: Pick<Ticket, 'saleId' | 'number' | 'status' | 'position'>): DibsError {
  const why =
    ticket.status === 'waiting'
      ? `is still waiting (${ticket.position} ahead)`
      : ticket.status === 'expired'
        ? 'was admitted but its window to reserve has passed'
        : ticket.status === 'used'
          ? 'was already used'
          : 'can no longer be admitted: the sale is sold out';
  return new DibsError('not_admitted', `ticket ${ticket.number} of sale '${ticket.saleId}' ${why}`, {
    field: 'ticket',
    retriable: ticket.status === 'waiting',
    details: { status: ticket.status, position: ticket.position },
  });
}

export function ticketRequired(saleId: string): DibsError {
  return new DibsError('ticket_required', `sale '${saleId}' has a waiting room: join it and reserve with your ticket`, {
    field: 'ticket',
  });
}

/**
 * How many tickets may be admitted now: the token bucket (refilled at `rate` per second since the
 * last admission, holding at most one second's worth — at least 1) and the units left for them.
 */
export function admissions(input: {
  budget: number;
  elapsedMs: number;
  rate: number;
  freeUnits: number;
  perCustomerLimit: number;
  waiting: number;
}): { admit: number; budget: number } {
  const budget = Math.min(Math.max(1, input.rate), input.budget + (Math.max(0, input.elapsedMs) / 1000) * input.rate);
  // a customer may take fewer units than its limit: admit while any unit is unspoken for
  const slots = Math.max(0, Math.ceil(input.freeUnits / input.perCustomerLimit));
  const admit = Math.max(0, Math.min(Math.floor(budget), slots, input.waiting));
  return { admit, budget: budget - admit };
}
