/** The judgements of a buy and a reservation, shared by the snapshot check, the single step and grouped buys. */
import { DibsError } from '../../core/errors.js';
import { limitReached, notLive, saleSoldOut } from '../../core/sales/rules.js';
import { statusOf, type SaleDoc, type SaleKeyDoc } from './sale-records.js';

/** The refusals of a buy, in the order every store judges them (after the key): window, limit, stock. */
export function judgeBuy(sale: SaleDoc, now: string, customer: string, units: number, quantity: number): void {
  const status = statusOf(sale, now);
  if (status !== 'live') throw notLive(sale.id, status);
  if (units + quantity > sale.limit) throw limitReached(sale.id, customer, units, quantity, sale.limit);
  if (sale.cap !== null) {
    const available = sale.cap - sale.sold - sale.held;
    if (quantity > available) throw saleSoldOut(sale.id, Math.max(0, available));
  }
}

/** A reservation replaces the customer's own active hold (`own` units): it counts neither against the limit nor the stock. */
export function judgeReserve(sale: SaleDoc, now: string, customer: string, units: number, own: number, quantity: number): void {
  const status = statusOf(sale, now);
  if (status !== 'live') throw notLive(sale.id, status);
  if (units + quantity - own > sale.limit) throw limitReached(sale.id, customer, units, quantity - own, sale.limit);
  if (sale.cap !== null) {
    const available = sale.cap - sale.sold - (sale.held - own);
    if (quantity > available) throw saleSoldOut(sale.id, Math.max(0, available));
  }
}

export function sameRequest(key: string, stored: SaleKeyDoc, kind: SaleKeyDoc['k'], customer: string, quantity: number): void {
  if (stored.k !== kind || stored.c !== customer || stored.q !== quantity) {
    throw new DibsError('conflict', `idempotency key '${key}' was already used for a different request (${stored.k} of ${stored.q} by '${stored.c}')`, { field: 'idempotencyKey' });
  }
}
