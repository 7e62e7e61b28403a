/** The refusals `sale_take` (sales.ts) and `take_granted` (grants.ts) answer alike. */
import { notFound } from '../../core/errors.js';
import { refusal } from '../../core/refusals.js';
import type { SaleStatus } from '../../core/sales/types.js';
import { ticketRequired } from '../../core/sales/waiting-room.js';

/** The columns a refused take fills in. */
export interface RefusedTake {
  outcome: string;
  status: SaleStatus | null;
  units: number | null;
  more: number | null;
  lim: number | null;
}

/** A refused take as the caller's error: the sale is unknown or not live, a ticket is needed, or the customer is at the limit. */
export function takeRefusal(r: RefusedTake, saleId: string, customer: string): Error {
  switch (r.outcome) {
    case 'not_found':
      return notFound('sale', saleId);
    case 'not_live':
      return refusal('sale_not_live', { sale: saleId, status: r.status! });
    case 'ticket_required':
      return ticketRequired(saleId);
    case 'limit_reached':
      return refusal('sale_limit', { sale: saleId, customer, units: r.units!, quantity: r.more!, limit: r.lim! });
    default:
      return new Error(`a take answered '${r.outcome}', which is not a refusal`);
  }
}
