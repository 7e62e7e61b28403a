/**
 * The requests that change a sale's stock, each run inside a SaleStep (one transaction, possibly
 * shared with other requests of the same sale: sale-queue.ts). Each decides every refusal before
 * it changes anything, so a refused request leaves the step as it found it.
 */
import { refusal } from '../../core/refusals.js';
import { newId } from '../../core/ids.js';
import type { BuyResult, Hold, HoldResult } from '../../core/sales/types.js';
import { judgeBuy, judgeReserve, judgeSaleKey } from '../../core/model/sales.js';
import { isoMs, saleState, toHold, toOrder, type CustomerDoc, type HoldDoc, type SaleKeyDoc } from './sale-records.js';
import type { SaleStep } from './sale-step.js';

export async function buyIn(
  step: SaleStep,
  customer: string,
  quantity: number,
  key: string | null,
): Promise<BuyResult> {
  const saleId = step.sale.id;
  const prior = key !== null ? await step.key(key) : null;
  if (prior) {
    judgeSaleKey(key!, priorOf(prior), 'buy', customer, quantity);
    return { order: toOrder(saleId, await step.order(prior.r)), replayed: true };
  }
  // a sale behind a waiting room sells only through admitted tickets (reserve, then confirm)
  if (step.sale.wr) throw refusal('sale_ticket_required', { sale: saleId });
  await step.loadCustomers([customer]);
  judgeBuy(saleState(step.sale), step.nowIso, customer, step.unitsOf(customer).units, quantity);
  const order = step.insertOrder(customer, quantity, null);
  if (key !== null) step.putKey(key, { k: 'buy', c: customer, q: quantity, r: order.id });
  return { order: toOrder(saleId, order), replayed: false };
}

export async function reserveIn(
  step: SaleStep,
  customer: string,
  quantity: number,
  ttlMs: number,
  key: string | null,
  /** The waiting room checked an admitted ticket in this same step (firestore/waiting-rooms.ts). */
  viaTicket = false,
): Promise<HoldResult> {
  const prior = key !== null ? await step.key(key) : null;
  if (prior) {
    judgeSaleKey(key!, priorOf(prior), 'reserve', customer, quantity);
    return { hold: toHold((await step.hold(prior.r))!), replayed: true };
  }
  if (step.sale.wr && !viaTicket) throw refusal('sale_ticket_required', { sale: step.sale.id });
  await step.loadCustomers([customer]);
  // the customer's own active hold is replaced; one that has expired but was not among the
  // holds the stale pass took is expired here
  const cust = step.customer(customer);
  let own: HoldDoc | null = cust.h !== null ? ((await step.hold(cust.h)) ?? null) : null;
  if (own && own.s === 'active' && own.e <= step.now) step.expire(own);
  if (own?.s !== 'active') own = null;
  // a cart's line is replaced only with its whole cart
  if (own?.cart) throw refusal('hold_in_cart', { hold: own.id, cart: own.cart });
  const { units, own: ownUnits } = step.unitsOf(customer);
  judgeReserve(saleState(step.sale), step.nowIso, customer, units, ownUnits, quantity);
  const expires = step.now + ttlMs;
  const hold: HoldDoc = own
    ? Object.assign(own, { q: quantity, e: expires, ae: expires })
    : {
        id: newId('hold'),
        sale: step.sale.id,
        c: customer,
        q: quantity,
        s: 'active',
        e: expires,
        ca: step.now,
        o: null,
        ae: expires,
      };
  step.putHold(hold);
  Object.assign(step.touchCustomer(customer), { h: hold.id, hq: quantity, he: expires } satisfies Partial<CustomerDoc>);
  const sale = step.touchSale();
  sale.held += quantity - ownUnits;
  sale.ne = Math.min(sale.ne ?? expires, expires);
  if (key !== null) step.putKey(key, { k: 'reserve', c: customer, q: quantity, r: hold.id });
  return { hold: toHold(hold), replayed: false };
}

export async function confirmIn(step: SaleStep, holdId: string): Promise<BuyResult> {
  const hold = await step.hold(holdId);
  if (!hold || hold.sale !== step.sale.id) throw new Error(`hold '${holdId}' is not a hold of sale '${step.sale.id}'`);
  if (hold.s === 'confirmed') return { order: toOrder(hold.sale, await step.order(hold.o!)), replayed: true };
  if (hold.s === 'cancelled') throw cancelledHold(holdId);
  await step.loadCustomers([hold.c]);
  if (hold.s === 'active' && hold.e <= step.now) step.expire(hold); // stale, beyond what the stale pass took
  if (hold.s === 'expired') throw holdExpired(hold);
  if (step.sale.cancelled !== null) throw refusal('sale_not_live', { sale: hold.sale, status: 'cancelled' });
  // an active hold already counts against the cap: it becomes an order without another stock
  // check (also after the sale's end: its holds stay confirmable until they expire)
  step.dropActive(hold, 'confirmed');
  const order = step.insertOrder(hold.c, hold.q, hold.id);
  hold.o = order.id;
  return { order: toOrder(hold.sale, order), replayed: false };
}

export async function cancelIn(step: SaleStep, holdId: string): Promise<Hold> {
  const hold = await step.hold(holdId);
  if (!hold || hold.sale !== step.sale.id) throw new Error(`hold '${holdId}' is not a hold of sale '${step.sale.id}'`);
  if (hold.s === 'confirmed') throw confirmedHold(hold);
  if (hold.s === 'active') {
    await step.loadCustomers([hold.c]);
    if (hold.e <= step.now) step.expire(hold);
    else step.dropActive(hold, 'cancelled');
  }
  return toHold(hold);
}

export const cancelledHold = (id: string) => refusal('hold_cancelled', { hold: id });
export const confirmedHold = (hold: HoldDoc) => refusal('hold_confirmed', { hold: hold.id, order: hold.o });
export const holdExpired = (hold: HoldDoc) => refusal('hold_expired', { hold: hold.id, expiresAt: isoMs(hold.e) });

const priorOf = (doc: SaleKeyDoc) => ({ kind: doc.k, customer: doc.c, quantity: doc.q });
