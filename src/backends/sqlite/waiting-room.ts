/**
 * Waiting rooms on SQLite. Every step is one write transaction that first runs admission for the
 * sale (expire unused windows, refill the rate budget, admit the next tickets in number order
 * while units remain, close the line when the sale is over), then does its own work — so the
 * order of admission never depends on which client polls first. The first step after the sale
 * opens makes a fair start's draw (core/sales/fair-draw.ts) in that same transaction.
 */
import { randomBytes } from 'node:crypto';
import { DibsError, notFound } from '../../core/errors.js';
import type { HoldResult } from '../../core/sales/types.js';
import { drawOrder } from '../../core/sales/fair-draw.js';
import {
  admissions,
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
import { prepareAll, write, type Db, type SqliteOptions, type Statements } from './database.js';
import type { SqliteSales } from './sales.js';

const Q = loadQueries(new URL('./waiting-room.sql', import.meta.url), [
  'roomOf',
  'upsertRoom',
  'placeUnplaced',
  'ticketOf',
  'takeNumber',
  'insertTicket',
  'expireWindows',
  'admittedUnused',
  'admitNext',
  'setAdmission',
  'closeWaiting',
  'useTicket',
  'elapsedMs',
  'unplaceAll',
  'placeTicket',
  'recordDraw',
  'verifyTicket',
]);

interface RoomRow {
  sale_id: string;
  admit_per_second: number;
  window_ms: number;
  secret: string;
  next_number: number;
  admitted_through: number;
  budget: number;
  refilled_at: string;
  created_at: string;
  fair_start: 0 | 1;
  verification: 0 | 1;
  draw_seed: string | null;
  pre_queue: number | null;
  drawn_at: string | null;
  /** Tickets by status (migration 017's triggers keep them with every ticket). */
  n_waiting: number;
  n_admitted: number;
  n_used: number;
  n_expired: number;
  n_sold_out: number;
}

interface TicketRow {
  sale_id: string;
  number: number;
  customer: string;
  status: TicketStatus;
  joined_at: string;
  admitted_until: string | null;
  hold_id: string | null;
  place: number | null;
  verified: 0 | 1;
}

export class SqliteWaitingRooms implements WaitingRoomBackend {
  private readonly stmt: Statements<typeof Q>;

  constructor(
    private readonly db: Db,
    private readonly options: SqliteOptions,
    private readonly sales: SqliteSales,
  ) {
    this.stmt = prepareAll(db, Q);
  }

  enable(saleId: string, spec: WaitingRoomSpec): Promise<WaitingRoom> {
    return write(this.db, this.options, () => {
      const now = this.sales.clock();
      const { row } = this.sales.snapshot(saleId, now);
      if (row.cap === null)
        throw new DibsError(
          'invalid_input',
          `sale '${saleId}' is unlimited: a waiting room needs a cap to admit against`,
          { field: 'saleId' },
        );
      this.stmt.upsertRoom.run({
        sale: saleId,
        rate: spec.admitPerSecond,
        windowMs: spec.windowMs,
        secret: randomBytes(32).toString('base64url'),
        now,
        fair: spec.fairStart === undefined ? null : spec.fairStart ? 1 : 0,
        verification: spec.verification === undefined ? null : spec.verification ? 1 : 0,
      });
      return this.describe(this.room(saleId));
    });
  }

  get(saleId: string): Promise<WaitingRoom> {
    return write(this.db, this.options, () => {
      const room = this.admit(saleId);
      return this.describe(room);
    });
  }

  join(saleId: string, customer: string): Promise<Ticket> {
    return write(this.db, this.options, () => {
      // a fair start not drawn yet: the draw (if the sale has opened) before a newcomer, so that who
      // joins after the opening is not in the pre-queue; admission itself runs once, after the insert
      let before = this.room(saleId);
      if (before.fair_start === 1 && before.drawn_at === null) before = this.drawIfOpen(before);
      if (!this.stmt.ticketOf.get(saleId, customer)) {
        const { number } = this.stmt.takeNumber.get(saleId) as { number: number };
        const preQueue = before.fair_start === 1 && before.drawn_at === null;
        this.stmt.insertTicket.run({
          sale: saleId,
          number,
          customer,
          now: this.sales.clock(),
          place: preQueue ? null : number,
          verified: before.verification === 1 ? 0 : 1,
        });
      }
      // admission after the insert: a newcomer to an empty line with units left is admitted at once
      const room = this.admit(saleId);
      return this.toTicket(room, this.stmt.ticketOf.get(saleId, customer) as TicketRow);
    });
  }

  ticket(saleId: string, customer: string, token: string): Promise<Ticket> {
    return write(this.db, this.options, () => {
      const room = this.admit(saleId);
      return this.toTicket(room, this.genuine(room, customer, token));
    });
  }

  reserve(saleId: string, customer: string, token: string, quantity: number, ttlMs: number): Promise<HoldResult> {
    return write(this.db, this.options, () => {
      const room = this.admit(saleId);
      const ticket = this.genuine(room, customer, token);
      // the same reservation again (a retry after a lost answer) gets the same hold back
      const key = `ticket:${ticket.number}`;
      if (ticket.status === 'used') return this.sales.reserveStep(saleId, customer, quantity, ttlMs, key, true);
      if (ticket.status !== 'admitted')
        throw notAdmitted({
          saleId,
          number: ticket.number,
          status: ticket.status,
          position: this.ahead(room, ticket),
          verified: ticket.verified === 1,
        });
      const result = this.sales.reserveStep(saleId, customer, quantity, ttlMs, key, true);
      this.stmt.useTicket.run({ sale: saleId, number: ticket.number, hold: result.hold.id });
      return result;
    });
  }

  verify(saleId: string, customer: string, token: string): Promise<Ticket> {
    return write(this.db, this.options, () => {
      const ticket = this.genuine(this.admit(saleId), customer, token);
      if (ticket.verified === 0) this.stmt.verifyTicket.run({ sale: saleId, number: ticket.number });
      // admission again: a verified ticket at the door goes in now
      const room = this.admit(saleId);
      return this.toTicket(room, this.stmt.ticketOf.get(saleId, customer) as TicketRow);
    });
  }

  /** Admission for one sale, inside the caller's transaction. Returns the room as it is after it. */
  private admit(saleId: string): RoomRow {
    let room = this.room(saleId);
    const now = this.sales.clock();
    const { row, status, held } = this.sales.snapshot(saleId, now);
    this.stmt.expireWindows.run(saleId, now);
    if (status === 'ended' || status === 'cancelled' || (row.cap !== null && row.sold >= row.cap)) {
      this.stmt.closeWaiting.run(saleId);
      return room;
    }
    if (status !== 'live') return room; // the line forms before the start; admission begins at it
    if (room.drawn_at === null) room = this.draw(room, now);
    const unused = (this.stmt.admittedUnused.get(saleId) as { n: number }).n;
    const elapsedMs = (this.stmt.elapsedMs.get({ now, then: room.refilled_at }) as { ms: number }).ms;
    // how many the bucket and the units allow; the query admits as many as are waiting (and verified)
    const { admit, budget } = admissions({
      budget: room.budget,
      elapsedMs,
      rate: room.admit_per_second,
      freeUnits: row.cap! - row.sold - held - unused * row.per_customer_limit,
      perCustomerLimit: row.per_customer_limit,
      waiting: Number.MAX_SAFE_INTEGER,
    });
    let through = room.admitted_through;
    let admitted = 0;
    if (admit > 0) {
      const until = new Date(Date.parse(now) + room.window_ms).toISOString();
      const places = this.stmt.admitNext.all({ sale: saleId, n: admit, until, verification: room.verification }) as {
        place: number;
      }[];
      admitted = places.length;
      for (const { place } of places) through = Math.max(through, place);
    }
    const left = budget + (admit - admitted);
    this.stmt.setAdmission.run({ sale: saleId, budget: left, now, through });
    return { ...room, budget: left, refilled_at: now, admitted_through: through };
  }

  /** The draw, if the sale is open (admission would make it now); the room as it is after. */
  private drawIfOpen(room: RoomRow): RoomRow {
    const now = this.sales.clock();
    const { status } = this.sales.snapshot(room.sale_id, now);
    return status === 'live' ? this.draw(room, now) : room;
  }

  /**
   * The opening: every ticket so far is the pre-queue (arrival numbers 1..n). A fair start places
   * them by a seeded shuffle whose seed is recorded; otherwise their place is their number — which
   * every ticket joined in arrival order has already, so only the unplaced are written.
   */
  private draw(room: RoomRow, now: string): RoomRow {
    const size = room.next_number - 1;
    const seed = room.fair_start === 1 ? randomBytes(8).toString('hex') : null;
    if (seed === null) this.stmt.placeUnplaced.run(room.sale_id);
    else {
      this.stmt.unplaceAll.run(room.sale_id);
      drawOrder(seed, size).forEach((number, k) => {
        this.stmt.placeTicket.run({ sale: room.sale_id, number, place: k + 1 });
      });
    }
    this.stmt.recordDraw.run({ sale: room.sale_id, seed, size, now });
    return { ...room, draw_seed: seed, pre_queue: size, drawn_at: now };
  }

  private room(saleId: string): RoomRow {
    const room = this.stmt.roomOf.get(saleId) as RoomRow | undefined;
    if (!room) throw notFound('waiting room of sale', saleId);
    return room;
  }

  private genuine(room: RoomRow, customer: string, token: string): TicketRow {
    const number = verifyTicket(room.secret, room.sale_id, customer, token);
    const ticket = this.stmt.ticketOf.get(room.sale_id, customer) as TicketRow | undefined;
    if (!ticket || ticket.number !== number)
      throw new DibsError(
        'invalid_ticket',
        `this ticket is not valid for customer '${customer}' in sale '${room.sale_id}'`,
        { field: 'ticket' },
      );
    return ticket;
  }

  private ahead(room: RoomRow, ticket: TicketRow): number {
    return ticketPosition(ticket, room.admitted_through, room.next_number - 1);
  }

  private toTicket(room: RoomRow, t: TicketRow): Ticket {
    const position = this.ahead(room, t);
    return {
      saleId: t.sale_id,
      customer: t.customer,
      number: t.number,
      status: t.status,
      place: t.place,
      verified: t.verified === 1,
      position,
      estimatedWaitMs: estimatedWait(t.status, position, room.admit_per_second),
      admittedUntil: t.admitted_until,
      holdId: t.hold_id,
      token: signTicket(room.secret, t.sale_id, t.customer, t.number),
    };
  }

  private describe(room: RoomRow): WaitingRoom {
    // the counters (as admission left them: read again), not a count of the tickets, so a status
    // read costs the same in a line of any length
    const n = this.room(room.sale_id);
    const tickets: Record<TicketStatus, number> = {
      waiting: n.n_waiting,
      admitted: n.n_admitted,
      used: n.n_used,
      expired: n.n_expired,
      sold_out: n.n_sold_out,
    };
    return {
      saleId: room.sale_id,
      admitPerSecond: room.admit_per_second,
      windowMs: room.window_ms,
      fairStart: room.fair_start === 1,
      verification: room.verification === 1,
      draw:
        room.drawn_at === null ? null : { seed: room.draw_seed, preQueue: room.pre_queue ?? 0, drawnAt: room.drawn_at },
      createdAt: room.created_at,
      tickets,
    };
  }
}
