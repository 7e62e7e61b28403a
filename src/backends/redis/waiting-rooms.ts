/**
 * Waiting rooms on Redis. A room lives in its sale's group slot (sale_lib.lua: T:room, T:tickets,
 * T:tnum, T:adm), so every step — admission (expire unused windows, refill the rate budget, admit
 * the next tickets in number order while units remain, close the line when the sale is over), then
 * the step's own work (join, read a ticket, or reserve with an admitted ticket together with the
 * hold and the per-customer limit) — is one script. Ticket numbers come from the room's counter in
 * that script, i.e. the order the store saw the arrivals. The first step after the opening makes a
 * fair start's draw (sale_lib.lua `draw`, the shuffle of core/sales/fair-draw.ts) with a seed this
 * adapter proposes on every step; only the step that begins the draw records and uses it. The draw
 * runs in bounded slices, one per script run, so that a large pre-queue does not stop Redis for
 * everyone else; a step that finds it unfinished is run again (each run draws the next slice, and
 * joining, reading or reserving again is idempotent) until it answers on a finished draw, so no
 * caller is told a half-drawn line. Whoever runs the slices, and however many callers die between
 * them, the draw is the one permutation of the recorded seed. The sweep that tells a sold-out line
 * is sliced the same way.
 *
 * Tokens are HMACs with the room's secret (core/sales/waiting-room.ts): it never leaves the store
 * and this adapter; the signature is checked here and the number it carries is checked against
 * the customer's ticket inside the reservation script.
 */
import { randomBytes } from 'node:crypto';
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
import { saleKey } from './keys.js';
import type { RedisSales } from './sales.js';
import { runScript, type RedisClient } from './scripts.js';

interface RoomState {
  rate: number;
  window: number;
  secret: string;
  next: number;
  through: number;
  created: number;
  fair: string;
  verify: string;
  drawn?: string;
  seed?: string;
  preq?: string;
  legacy?: boolean;
  /** Set when this step did a slice of a longer job (the opening's draw, the sell-out sweep) and more remain: step again. */
  more?: boolean;
  /** The number of the recount of the ticket counters in progress, if one is (sale_lib.lua `recount_slice`). */
  recounting?: number;
}

interface TicketRecord {
  n: number;
  c: string;
  s: TicketStatus;
  j: number;
  u?: number;
  h?: string;
  p?: number;
  v?: number;
}

export class RedisWaitingRooms implements WaitingRoomBackend {
  constructor(
    private readonly client: RedisClient,
    private readonly sales: RedisSales,
  ) {}

  async enable(saleId: string, spec: WaitingRoomSpec): Promise<WaitingRoom> {
    await this.sales.onSale(saleId, async (tag) => {
      const reply = await runScript(
        this.client,
        'sale_room_enable',
        [saleKey(tag, 'sale', saleId)],
        [
          tag,
          saleId,
          spec.admitPerSecond,
          spec.windowMs,
          randomBytes(32).toString('base64url'),
          flag(spec.fairStart),
          flag(spec.verification),
        ],
      );
      if (reply === 'not_found') throw notFound('sale', saleId);
      if (reply === 'unlimited')
        throw new DibsError(
          'invalid_input',
          `sale '${saleId}' is unlimited: a waiting room needs a cap to admit against`,
          { field: 'saleId' },
        );
    });
    return this.get(saleId);
  }

  async get(saleId: string): Promise<WaitingRoom> {
    return this.roomOf(saleId, 'get');
  }

  /**
   * The repair path for the ticket counters: recounts them from the tickets now (in slices, like
   * any recount), then answers as `get`. Steps recount by themselves when the counters are missing
   * or show signs of an older build's writes (sale_lib.lua `counters_drifted`); this is for an
   * operator who does not want to rely on those signs, e.g. after a rolling upgrade.
   */
  async recount(saleId: string): Promise<WaitingRoom> {
    return this.roomOf(saleId, 'recount');
  }

  private async roomOf(saleId: string, op: 'get' | 'recount'): Promise<WaitingRoom> {
    const { room, counts } = (await this.step(saleId, op, '')) as {
      room: RoomState;
      counts: Record<TicketStatus, number>;
    };
    return {
      saleId,
      admitPerSecond: room.rate,
      windowMs: room.window,
      fairStart: room.fair === '1',
      verification: room.verify === '1',
      draw:
        room.drawn === undefined
          ? null
          : {
              seed: room.seed ? room.seed : null,
              preQueue: Number(room.preq ?? 0),
              drawnAt: new Date(Number(room.drawn)).toISOString(),
            },
      createdAt: new Date(room.created).toISOString(),
      tickets: counts,
    };
  }

  async join(saleId: string, customer: string): Promise<Ticket> {
    const { room, ticket } = (await this.step(saleId, 'join', customer)) as { room: RoomState; ticket: TicketRecord };
    return toTicket(saleId, room, ticket);
  }

  async ticket(saleId: string, customer: string, token: string): Promise<Ticket> {
    const { room, ticket } = (await this.step(saleId, 'ticket', customer)) as {
      room: RoomState;
      ticket?: TicketRecord;
    };
    const number = verifyTicket(room.secret, saleId, customer, token);
    if (!ticket || ticket.n !== number) throw invalidTicket(saleId, customer);
    return toTicket(saleId, room, ticket);
  }

  async reserve(saleId: string, customer: string, token: string, quantity: number, ttlMs: number): Promise<HoldResult> {
    return this.sales.onSale(saleId, async (tag, group) => {
      const secret = await this.client.hget(saleKey(tag, 'room', saleId), 'secret');
      if (secret === null) throw roomNotFound(saleId);
      const number = verifyTicket(secret, saleId, customer, token);
      const holdId = `hold_${group}${randomBytes(12).toString('hex')}`;
      for (;;) {
        const reply = (await runScript(
          this.client,
          'sale_room_reserve',
          [saleKey(tag, 'room', saleId)],
          [tag, saleId, customer, number, quantity, ttlMs, holdId, drawSeed()],
        )) as string | string[];
        if (reply === 'not_found') throw roomNotFound(saleId);
        const [head, body] = reply as string[];
        if (head === 'invalid_ticket') throw invalidTicket(saleId, customer);
        if (head !== 'not_admitted')
          return this.sales.holdReply(saleId, customer, `ticket:${number}`, reply as string[]);
        const { room, ticket } = JSON.parse(body!) as { room: RoomState; ticket: TicketRecord };
        // the opening's draw or the sell-out sweep is still in progress: that run did a slice, the next goes on
        if (room.more === true) continue;
        throw notAdmitted({
          saleId,
          number: ticket.n,
          status: ticket.s,
          position: positionOf(room, ticket),
          verified: ticket.v !== 0,
        });
      }
    });
  }

  async verify(saleId: string, customer: string, token: string): Promise<Ticket> {
    // the signature first: an invalid token changes nothing
    await this.ticket(saleId, customer, token);
    const { room, ticket } = (await this.step(saleId, 'verify', customer)) as { room: RoomState; ticket: TicketRecord };
    return toTicket(saleId, room, ticket);
  }

  private async step(
    saleId: string,
    op: 'get' | 'recount' | 'join' | 'ticket' | 'verify',
    customer: string,
  ): Promise<Record<string, unknown>> {
    return this.sales.onSale(saleId, async (tag) => {
      /** The recount in progress at the first step, which a read of the counts waits for. */
      let awaited: number | undefined;
      // a recount asked for is begun by the first step only: the next ones go on with it
      let thisOp = op;
      for (;;) {
        const reply = (await runScript(
          this.client,
          'sale_room_step',
          [saleKey(tag, 'room', saleId)],
          [tag, saleId, thisOp, customer, drawSeed()],
        )) as string;
        if (thisOp === 'recount') thisOp = 'get';
        if (reply === 'not_found') {
          // no room: the sale itself may be unknown too
          if ((await this.client.exists(saleKey(tag, 'sale', saleId))) === 0) throw notFound('sale', saleId);
          throw roomNotFound(saleId);
        }
        const answer = JSON.parse(reply) as { room: RoomState } & Record<string, unknown>;
        // the opening's draw or the sell-out sweep is still in progress: that run did a slice, the next goes on
        if (answer.room.more === true) continue;
        // counts are read once the recount found at the first step has ended; if another has begun
        // meanwhile (an older build of a rolling upgrade keeps writing), the counters as they are:
        // waiting for a quiet store could wait for the whole upgrade
        const recounting = answer.room.recounting;
        if ((op === 'get' || op === 'recount') && recounting !== undefined && (awaited ??= recounting) === recounting)
          continue;
        return answer;
      }
    });
  }
}

/** A setting for sale_room_enable: '1', '0', or '' to keep it as it is. */
const flag = (on: boolean | undefined): string => (on === undefined ? '' : on ? '1' : '0');

/** A fresh 64-bit seed for the draw, proposed with every step (only the step that draws uses it). */
const drawSeed = (): string => randomBytes(8).toString('hex');

const placeOf = (room: RoomState, t: TicketRecord): number | null => t.p ?? (room.legacy ? t.n : null);

function positionOf(room: RoomState, t: TicketRecord): number {
  return ticketPosition({ status: t.s, place: placeOf(room, t) }, room.through, room.next - 1);
}

function toTicket(saleId: string, room: RoomState, t: TicketRecord): Ticket {
  const position = positionOf(room, t);
  return {
    saleId,
    customer: t.c,
    number: t.n,
    status: t.s,
    place: placeOf(room, t),
    verified: t.v !== 0,
    position,
    estimatedWaitMs: estimatedWait(t.s, position, room.rate),
    admittedUntil: t.u === undefined ? null : new Date(t.u).toISOString(),
    holdId: t.h ?? null,
    token: signTicket(room.secret, saleId, t.c, t.n),
  };
}

const roomNotFound = (saleId: string) => notFound('waiting room of sale', saleId);
const invalidTicket = (saleId: string, customer: string) =>
  new DibsError('invalid_ticket', `this ticket is not valid for customer '${customer}' in sale '${saleId}'`, {
    field: 'ticket',
  });
