/** `dibs.waitingRooms`: validates once, then delegates to the store's WaitingRoomBackend. */
import { DibsError } from '../errors.js';
import { parseInput } from '../validate.js';
import { customerSchema, quantitySchema, saleIdSchema, ttlSchema } from './schemas.js';
import type { HoldResult } from './types.js';
import {
  ticketTokenSchema,
  waitingRoomSpecSchema,
  type Ticket,
  type WaitingRoom,
  type WaitingRoomBackend,
  type WaitingRoomSpec,
} from './waiting-room.js';

export class WaitingRooms {
  constructor(
    private readonly backend: WaitingRoomBackend | undefined,
    private readonly kind: string,
  ) {}

  private get store(): WaitingRoomBackend {
    if (!this.backend)
      throw new DibsError('unsupported', `the ${this.kind} store does not support waiting rooms yet`, {
        field: 'store',
      });
    return this.backend;
  }

  /** Puts a capped sale behind a waiting room (or changes its rate/window). */
  async enable(saleId: string, spec: WaitingRoomSpec): Promise<WaitingRoom> {
    return this.store.enable(sale(saleId), parseInput(waitingRoomSpecSchema, spec));
  }

  async get(saleId: string): Promise<WaitingRoom> {
    return this.store.get(sale(saleId));
  }

  /** A ticket in arrival order; the same customer joining again gets the same ticket. */
  async join(saleId: string, customer: string): Promise<Ticket> {
    return this.store.join(sale(saleId), who(customer));
  }

  /** The ticket's position and status now (admission runs first). */
  async ticket(saleId: string, customer: string, token: string): Promise<Ticket> {
    return this.store.ticket(sale(saleId), who(customer), parseInput(ticketTokenSchema, token, 'ticket'));
  }

  /**
   * Marks a ticket verified — call it once your own check of the customer passed (a challenge,
   * say). In a room with `verification`, only verified tickets are admitted.
   */
  async verify(saleId: string, customer: string, token: string): Promise<Ticket> {
    return this.store.verify(sale(saleId), who(customer), parseInput(ticketTokenSchema, token, 'ticket'));
  }

  /** Reserves with an admitted ticket; confirm or cancel the hold through `dibs.sales`. */
  async reserve(saleId: string, customer: string, token: string, quantity: number, ttlMs: number): Promise<HoldResult> {
    return this.store.reserve(
      sale(saleId),
      who(customer),
      parseInput(ticketTokenSchema, token, 'ticket'),
      parseInput(quantitySchema, quantity, 'quantity'),
      parseInput(ttlSchema, ttlMs, 'ttlMs'),
    );
  }
}

const sale = (id: string) => parseInput(saleIdSchema, id, 'sale');
const who = (customer: string) => parseInput(customerSchema, customer, 'customer');
