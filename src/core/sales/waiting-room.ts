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
 * Fair start (`fairStart`): everyone who joined before the sale opened is put in a random place in
 * line by one draw the store makes at the opening (fair-draw.ts: a seeded shuffle, the seed is
 * recorded on the room so the order can be re-derived); later arrivals keep arrival order behind
 * them. Admission goes by place; a ticket's arrival `number` never changes (its token signs it).
 *
 * Verification (`verification`): a ticket is admitted only once the integrator has checked the
 * customer (a challenge, say) and called `verify`; admission passes over unverified tickets, and a
 * ticket verified after being passed over is admitted first at the next admission.
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
  /** Those who join before the sale opens get a random place at the opening (default false: arrival order). */
  fairStart?: boolean;
  /** A ticket is admitted only once `verify`d (default false). */
  verification?: boolean;
}

/** The fair start's draw, made once by the store at the opening. */
export interface RoomDraw {
  /** 16 hex digits; `drawOrder(seed, preQueue)` re-derives the order (null: no shuffle, arrival order). */
  seed: string | null;
  /** Tickets in the pre-queue: arrival numbers 1..preQueue, placed 1..preQueue by the draw. */
  preQueue: number;
  drawnAt: string;
}

export interface WaitingRoom extends Required<WaitingRoomSpec> {
  saleId: string;
  /** null until the sale opens (the first step after it draws). */
  draw: RoomDraw | null;
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
  /** Place in line: arrival order, or drawn at the opening for the pre-queue of a fair start (null until then). */
  place: number | null;
  /** Verified for admission (always true in a room without verification). */
  verified: boolean;
  /** Tickets ahead of this one (0 once admitted; before a fair start's draw, everyone else in the pre-queue). */
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
  /**
   * Sale must exist and be capped. Replaces the settings of an existing room (keeps its tickets and
   * any draw made); `fairStart`/`verification` left out keep their current value (false for a new room).
   */
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
  /** Marks the ticket verified (idempotent); only meaningful in a room with `verification`. */
  verify(saleId: string, customer: string, token: string): Promise<Ticket>;
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
    fairStart: z.boolean({ error: 'must be true or false' }).optional(),
    verification: z.boolean({ error: 'must be true or false' }).optional(),
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

export function notAdmitted(
  ticket: Pick<Ticket, 'saleId' | 'number' | 'status' | 'position'> & { verified?: boolean },
): DibsError {
  const why =
    ticket.status === 'waiting'
      ? ticket.verified === false
        ? `waits for verification (${ticket.position} ahead)`
        : `is still waiting (${ticket.position} ahead)`
      : ticket.status === 'expired'
        ? 'was admitted but its window to reserve has passed'
        : ticket.status === 'used'
          ? 'was already used'
          : 'can no longer be admitted: the sale is sold out';
  return new DibsError('not_admitted', `ticket ${ticket.number} of sale '${ticket.saleId}' ${why}`, {
    field: 'ticket',
    retriable: ticket.status === 'waiting',
    details: {
      status: ticket.status,
      position: ticket.position,
      ...(ticket.verified === false ? { verified: false } : {}),
    },
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

/** Waiting tickets ahead of one: by place once drawn; before a fair start's draw, the rest of the pre-queue. */
export function ticketPosition(
  t: { status: TicketStatus; place: number | null },
  through: number,
  joined: number,
): number {
  if (t.status !== 'waiting') return 0;
  if (t.place === null) return Math.max(0, joined - 1);
  return Math.max(0, t.place - through - 1);
}

/** The estimate `(position + 1) / rate` for a waiting ticket, 0 once admitted, null when it never will be. */
export function estimatedWait(status: TicketStatus, position: number, rate: number): number | null {
  return status === 'waiting' ? Math.ceil(((position + 1) / rate) * 1000) : status === 'admitted' ? 0 : null;
}
