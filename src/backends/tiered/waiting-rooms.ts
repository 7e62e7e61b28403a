/**
 * Tiered mode's waiting rooms: the ledger's, except that enabling a room also takes back the fast
 * path's grants and drops the sale's Redis state, so from then on buys go to the ledger path (which
 * answers ticket_required) instead of Redis selling the rest of a grant. The ledger also refuses a
 * fast-path order once a room exists (takeGranted), which covers a Redis that missed the reset.
 */
import type { HoldResult } from '../../core/sales/types.js';
import type { Ticket, WaitingRoom, WaitingRoomBackend, WaitingRoomSpec } from '../../core/sales/waiting-room.js';

export class TieredWaitingRooms implements WaitingRoomBackend {
  constructor(
    private readonly ledger: WaitingRoomBackend,
    private readonly resetFastPath: (saleId: string) => Promise<unknown>,
  ) {}

  async enable(saleId: string, spec: WaitingRoomSpec): Promise<WaitingRoom> {
    const room = await this.ledger.enable(saleId, spec);
    // Best effort: a Redis that is down or missed this is still refused by the ledger per order.
    await this.resetFastPath(saleId).catch(() => {});
    return room;
  }

  get(saleId: string): Promise<WaitingRoom> {
    return this.ledger.get(saleId);
  }

  join(saleId: string, customer: string): Promise<Ticket> {
    return this.ledger.join(saleId, customer);
  }

  ticket(saleId: string, customer: string, token: string): Promise<Ticket> {
    return this.ledger.ticket(saleId, customer, token);
  }

  reserve(saleId: string, customer: string, token: string, quantity: number, ttlMs: number): Promise<HoldResult> {
    return this.ledger.reserve(saleId, customer, token, quantity, ttlMs);
  }

  verify(saleId: string, customer: string, token: string): Promise<Ticket> {
    return this.ledger.verify(saleId, customer, token);
  }
}
