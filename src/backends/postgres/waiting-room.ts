/**
 * Waiting rooms on PostgreSQL. Every step starts with `room_step` (functions/room_step.sql): ONE statement
 * that locks the sale row (serialising admissions of that sale with every hold and confirmation),
 * expires unused windows, refills the rate budget, admits the next tickets in number order while
 * units remain, closes the line when the sale is over — and answers with the room and the asked-for
 * ticket. So the order of admission never depends on which client polls first, and the sale row is
 * locked for one statement, not for client round trips. A ticket poll (`room_poll`, functions/room_poll.sql)
 * steps only when the lock is free and otherwise reads the committed ticket, so thousands of pollers
 * never queue on the sale row. The first step after the sale opens makes a fair start's draw
 * (functions/room_draw.sql) in that statement. A reservation runs that step, the hold
 * (PgSales, with `p_via_ticket`) and the ticket's use in one transaction. Times are now().
 */
import { randomBytes } from 'node:crypto';
import type pg from 'pg';
import { DibsError, notFound } from '../../core/errors.js';
import type { HoldResult } from '../../core/sales/types.js';
import {
  estimatedWait,
  notAdmitted,
  signTicket,
  ticketPosition,
  verifyTicket,
  type Ticket,
  type TicketStatus,
  type WaitingRoom,
  type WaitingRoomBackend,
  type WaitingRoomSpec,
} from '../../core/sales/waiting-room.js';
import { loadQueries } from '../shared/sql-files.js';
import { query, withTransaction } from './connection.js';
import type { PgSales } from './sales.js';

const Q = loadQueries(new URL('./waiting-room.sql', import.meta.url), [
  'step',
  'poll',
  'lockSale',
  'upsertRoom',
  'ticketCounts',
  'useTicket',
  'verifyTicket',
]);

/** One row of `room_step`: the room after admission, and the asked-for customer's ticket (if any). */
interface StepRow {
  sale_id: string;
  admit_per_second: number;
  window_ms: number;
  secret: string;
  admitted_through: string;
  created_at: Date;
  fair_start: boolean;
  verification: boolean;
  draw_seed: string | null;
  pre_queue: string | null;
  drawn_at: Date | null;
  joined: string;
  number: string | null;
  customer: string | null;
  status: TicketStatus | null;
  admitted_until: Date | null;
  hold_id: string | null;
  place: string | null;
  verified: boolean | null;
}

type Db = pg.Pool | pg.ClientBase;

export class PgWaitingRooms implements WaitingRoomBackend {
  constructor(
    private readonly pool: pg.Pool,
    private readonly sales: PgSales,
  ) {}

  enable(saleId: string, spec: WaitingRoomSpec): Promise<WaitingRoom> {
    return withTransaction(this.pool, async (client) => {
      const sale = (await client.query<{ cap: number | null }>(Q.lockSale, [saleId])).rows[0];
      if (!sale) throw notFound('sale', saleId);
      if (sale.cap === null)
        throw new DibsError(
          'invalid_input',
          `sale '${saleId}' is unlimited: a waiting room needs a cap to admit against`,
          { field: 'saleId' },
        );
      await client.query(Q.upsertRoom, [
        saleId,
        spec.admitPerSecond,
        spec.windowMs,
        randomBytes(32).toString('base64url'),
        spec.fairStart ?? null,
        spec.verification ?? null,
      ]);
      return this.describe(client, await this.step(client, saleId, null, false));
    });
  }

  async get(saleId: string): Promise<WaitingRoom> {
    return this.describe(this.pool, await this.step(this.pool, saleId, null, false));
  }

  async join(saleId: string, customer: string): Promise<Ticket> {
    // admission runs after the insert: a newcomer to an empty line with units left is admitted at once
    return toTicket(await this.step(this.pool, saleId, customer, true));
  }

  async ticket(saleId: string, customer: string, token: string): Promise<Ticket> {
    // A poll never queues behind the sale row lock: if another step holds it, the committed ticket is the answer.
    const row = (await query<StepRow>(this.pool, Q.poll, [saleId, customer])).rows[0];
    if (!row) throw notFound('waiting room of sale', saleId);
    return toTicket(genuine(row, saleId, customer, token));
  }

  reserve(saleId: string, customer: string, token: string, quantity: number, ttlMs: number): Promise<HoldResult> {
    return withTransaction(this.pool, async (client) => {
      const ticket = genuine(await this.step(client, saleId, customer, false), saleId, customer, token);
      // the same reservation again (a retry after a lost answer) gets the same hold back
      const key = `ticket:${ticket.number}`;
      if (ticket.status === 'used') return this.sales.reserveViaTicket(client, saleId, customer, quantity, ttlMs, key);
      if (ticket.status !== 'admitted')
        throw notAdmitted({
          saleId,
          number: Number(ticket.number),
          status: ticket.status!,
          position: ahead(ticket),
          verified: ticket.verified !== false,
        });
      const result = await this.sales.reserveViaTicket(client, saleId, customer, quantity, ttlMs, key);
      await client.query(Q.useTicket, [saleId, ticket.number, result.hold.id]);
      return result;
    });
  }

  verify(saleId: string, customer: string, token: string): Promise<Ticket> {
    return withTransaction(this.pool, async (client) => {
      const ticket = genuine(await this.step(client, saleId, customer, false), saleId, customer, token);
      if (ticket.verified === false) await client.query(Q.verifyTicket, [saleId, ticket.number]);
      // admission again: a verified ticket at the door goes in now
      return toTicket(await this.step(client, saleId, customer, false));
    });
  }

  /** Admission (and a join) in one statement; `not_found` for an unknown sale or room. */
  private async step(db: Db, saleId: string, customer: string | null, join: boolean): Promise<StepRow> {
    const row = (
      db === this.pool
        ? await query<StepRow>(this.pool, Q.step, [saleId, customer, join])
        : await (db as pg.ClientBase).query<StepRow>(Q.step, [saleId, customer, join])
    ).rows[0];
    if (!row) throw notFound('waiting room of sale', saleId);
    return row;
  }

  private async describe(db: Db, room: StepRow): Promise<WaitingRoom> {
    const counted = (await db.query<Record<TicketStatus, number>>(Q.ticketCounts, [room.sale_id])).rows[0];
    const tickets: Record<TicketStatus, number> = counted ?? {
      waiting: 0,
      admitted: 0,
      used: 0,
      expired: 0,
      sold_out: 0,
    };
    return {
      saleId: room.sale_id,
      admitPerSecond: room.admit_per_second,
      windowMs: room.window_ms,
      fairStart: room.fair_start,
      verification: room.verification,
      draw:
        room.drawn_at === null
          ? null
          : { seed: room.draw_seed, preQueue: Number(room.pre_queue ?? 0), drawnAt: room.drawn_at.toISOString() },
      createdAt: room.created_at.toISOString(),
      tickets,
    };
  }
}

/** The row's ticket if `token` is its genuine token for `customer`; `invalid_ticket` otherwise. */
function genuine(row: StepRow, saleId: string, customer: string, token: string): StepRow {
  const number = verifyTicket(row.secret, saleId, customer, token);
  if (row.number === null || Number(row.number) !== number)
    throw new DibsError('invalid_ticket', `this ticket is not valid for customer '${customer}' in sale '${saleId}'`, {
      field: 'ticket',
    });
  return row;
}

/** Tickets ahead of this one (0 once admitted). */
const ahead = (row: StepRow): number =>
  ticketPosition(
    { status: row.status!, place: row.place === null ? null : Number(row.place) },
    Number(row.admitted_through),
    Number(row.joined),
  );

function toTicket(row: StepRow): Ticket {
  const position = ahead(row);
  const number = Number(row.number);
  const status = row.status!;
  return {
    saleId: row.sale_id,
    customer: row.customer!,
    number,
    status,
    place: row.place === null ? null : Number(row.place),
    verified: row.verified !== false,
    position,
    estimatedWaitMs: estimatedWait(status, position, row.admit_per_second),
    admittedUntil: row.admitted_until?.toISOString() ?? null,
    holdId: row.hold_id,
    token: signTicket(row.secret, row.sale_id, row.customer!, number),
  };
}
