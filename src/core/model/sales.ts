/**
 * The reference model of sale steps: the judgements of a buy and a reservation over a
 * store-neutral snapshot read inside the step. Firestore's steps call them directly; the SQL and
 * Lua steps answer the same refusals in the same order (window, limit, stock), which the
 * model-based tests (test/model/) hold them to.
 */
import { refusal } from '../refusals.js';
import { saleStatus } from '../sales/rules.js';

/** A sale as a step sees it: its rules and its counts (`held`: units of live holds). */
export interface SaleState {
  id: string;
  startsAt: string;
  endsAt: string;
  cancelledAt: string | null;
  /** null = unlimited. */
  cap: number | null;
  perCustomerLimit: number;
  sold: number;
  held: number;
}

/** The refusals of a buy, in the order every store judges them (after the key): window, limit, stock. */
export function judgeBuy(sale: SaleState, now: string, customer: string, units: number, quantity: number): void {
  const status = saleStatus(sale, now);
  if (status !== 'live') throw refusal('sale_not_live', { sale: sale.id, status });
  if (units + quantity > sale.perCustomerLimit)
    throw refusal('sale_limit', { sale: sale.id, customer, units, quantity, limit: sale.perCustomerLimit });
  if (sale.cap !== null) {
    const available = sale.cap - sale.sold - sale.held;
    if (quantity > available) throw refusal('sale_sold_out', { sale: sale.id, available: Math.max(0, available) });
  }
}

/** A reservation replaces the customer's own active hold (`own` units): it counts neither against the limit nor the stock. */
export function judgeReserve(
  sale: SaleState,
  now: string,
  customer: string,
  units: number,
  own: number,
  quantity: number,
): void {
  const status = saleStatus(sale, now);
  if (status !== 'live') throw refusal('sale_not_live', { sale: sale.id, status });
  if (units + quantity - own > sale.perCustomerLimit)
    throw refusal('sale_limit', {
      sale: sale.id,
      customer,
      units,
      quantity: quantity - own,
      limit: sale.perCustomerLimit,
    });
  if (sale.cap !== null) {
    const available = sale.cap - sale.sold - (sale.held - own);
    if (quantity > available) throw refusal('sale_sold_out', { sale: sale.id, available: Math.max(0, available) });
  }
}

export type SaleKeyKind = 'buy' | 'reserve';

/** A sale's idempotency key seen before must name the same kind, customer and quantity. */
export function judgeSaleKey(
  key: string,
  prior: { kind: SaleKeyKind; customer: string; quantity: number },
  kind: SaleKeyKind,
  customer: string,
  quantity: number,
): void {
  if (prior.kind !== kind || prior.customer !== customer || prior.quantity !== quantity)
    throw refusal('key_reused', {
      key,
      prior: { kind: prior.kind, quantity: prior.quantity, customer: prior.customer },
    });
}

/** A lower per-customer limit may not go below what a customer already has (orders and live holds). */
export function judgeCustomerLimitChange(sale: string, requested: number, maxUnits: number): void {
  if (requested < maxUnits) throw refusal('sale_limit_below_units', { sale, requested, units: maxUnits });
}
