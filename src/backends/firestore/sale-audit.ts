/**
 * The audit of one sale: every document of the sale read in one consistent read-only snapshot,
 * checked against I2 (per-customer limit over orders and live holds), I3 (sold + live holds ≤
 * cap), I4 (the sale's and customers' counters equal the orders and holds; hold states agree
 * with their index field and their customer's pointer), I7 (one event per recorded change) and I9
 * (every cart with a line on the sale is whole: cart-audit.ts).
 */
import type { SaleViolation } from '../../core/sales/backend.js';
import { notFound } from '../../core/errors.js';
import { soldOutEventViolation } from '../../core/sales/rules.js';
import { auditCartsOfSale } from './cart-audit.js';
import type { Layout } from './layout.js';
import type { CustomerDoc, HoldDoc, OrderDoc, SaleDoc } from './sale-records.js';
import type { TxRunner } from './transactions.js';

export async function auditSale(layout: Layout, runner: TxRunner, id: string): Promise<SaleViolation[]> {
  const refs = layout.sale(id);
  const [saleSnap, holdSnaps, orderSnaps, custSnaps, eventSnaps, cartViolations] = await runner.snapshot(
    refs.sale,
    async (tx) => {
      const read = await Promise.all([
        tx.get(refs.sale),
        tx.get(layout.holds.where('sale', '==', id)),
        tx.get(refs.orders),
        tx.get(refs.customers),
        tx.get(layout.events.where('sale', '==', id)),
      ]);
      // I9: the carts with a line on the sale, read whole in the same snapshot (cart-audit.ts)
      const [sale, holds] = read;
      const carts = sale.exists
        ? await auditCartsOfSale(
            tx,
            layout,
            id,
            holds.docs.map((d) => d.data() as HoldDoc),
            sale.readTime.toMillis(),
          )
        : [];
      return [...read, carts] as const;
    },
  );
  if (!saleSnap.exists) throw notFound('sale', id);
  const sale = saleSnap.data() as SaleDoc;
  const now = saleSnap.readTime.toMillis();
  const holds = holdSnaps.docs.map((d) => d.data() as HoldDoc);
  const orders = orderSnaps.docs.map((d) => d.data() as OrderDoc);
  const customers = custSnaps.docs.map((d) => d.data() as CustomerDoc);
  const events = new Map<string, number>();
  for (const e of eventSnaps.docs) events.set(e.get('type') as string, (events.get(e.get('type') as string) ?? 0) + 1);

  const v: SaleViolation[] = [];
  const ordered = orders.reduce((sum, o) => sum + o.q, 0);
  const active = holds.filter((h) => h.s === 'active');
  const activeUnits = active.reduce((sum, h) => sum + h.q, 0);
  const live = active.filter((h) => h.e > now);
  const liveUnits = live.reduce((sum, h) => sum + h.q, 0);
  if (ordered !== sale.sold)
    v.push({
      invariant: 'I4',
      sale: id,
      expected: ordered,
      actual: sale.sold,
      message: `sold counter says ${sale.sold} but orders hold ${ordered} units`,
    });
  if (activeUnits !== sale.held)
    v.push({
      invariant: 'I4',
      sale: id,
      expected: activeUnits,
      actual: sale.held,
      message: `held counter says ${sale.held} but active holds have ${activeUnits} units`,
    });
  if (sale.cap !== null && ordered + liveUnits > sale.cap)
    v.push({
      invariant: 'I3',
      sale: id,
      expected: sale.cap,
      actual: ordered + liveUnits,
      message: `sold ${ordered} + held ${liveUnits} exceeds the cap of ${sale.cap}`,
    });
  const minExpiry = Math.min(...active.map((h) => h.e));
  if (active.length > 0 && (sale.ne === undefined || sale.ne > minExpiry))
    v.push({
      invariant: 'I4',
      sale: id,
      expected: minExpiry,
      actual: sale.ne ?? null,
      message: `the sale's next expiry (${sale.ne ?? 'none'}) is later than its earliest active hold's (${minExpiry})`,
    });

  const units = new Map<string, number>();
  const orderedBy = new Map<string, number>();
  for (const o of orders) {
    units.set(o.c, (units.get(o.c) ?? 0) + o.q);
    orderedBy.set(o.c, (orderedBy.get(o.c) ?? 0) + o.q);
  }
  for (const h of live) units.set(h.c, (units.get(h.c) ?? 0) + h.q);
  for (const [customer, n] of units) {
    if (n > sale.limit)
      v.push({
        invariant: 'I2',
        sale: id,
        customer,
        expected: sale.limit,
        actual: n,
        message: `customer '${customer}' has ${n} units, limit ${sale.limit}`,
      });
  }
  const orderIds = new Map(orders.map((o) => [o.id, o]));
  const holdsById = new Map(holds.map((h) => [h.id, h]));
  for (const h of holds) {
    if (h.s === 'confirmed' && (!h.o || orderIds.get(h.o)?.h !== h.id))
      v.push({ invariant: 'I4', sale: id, message: `hold '${h.id}' is confirmed but has no order` });
    if ((h.s === 'active') !== (h.ae !== undefined) || (h.ae !== undefined && h.ae !== h.e))
      v.push({
        invariant: 'I4',
        sale: id,
        message: `hold '${h.id}' is ${h.s} but its expiry index says ${h.ae ?? 'none'}`,
      });
  }
  const custs = new Map(customers.map((c) => [c.c, c]));
  for (const c of customers) {
    const expected = orderedBy.get(c.c) ?? 0;
    if (c.o !== expected)
      v.push({
        invariant: 'I4',
        sale: id,
        customer: c.c,
        expected,
        actual: c.o,
        message: `customer '${c.c}' is counted with ${c.o} ordered units, orders say ${expected}`,
      });
    if (c.h !== null) {
      const h = holdsById.get(c.h);
      if (h?.s !== 'active' || h.q !== c.hq || h.e !== c.he)
        v.push({
          invariant: 'I4',
          sale: id,
          customer: c.c,
          message: `customer '${c.c}' points at hold '${c.h}', which is not their active hold as recorded`,
        });
    }
  }
  for (const [customer] of orderedBy)
    if (!custs.has(customer))
      v.push({
        invariant: 'I4',
        sale: id,
        customer,
        message: `customer '${customer}' has orders but no customer record`,
      });
  for (const h of active) {
    if (custs.get(h.c)?.h !== h.id)
      v.push({
        invariant: 'I4',
        sale: id,
        customer: h.c,
        message: `active hold '${h.id}' is not the one its customer '${h.c}' points at`,
      });
  }
  const expectEvents: [string, number][] = [
    ['sale.sold_out', sale.soldout ? 1 : 0],
    ['hold.expired', holds.filter((h) => h.s === 'expired').length],
    ['sale.live', sale.announced !== null ? 1 : 0],
    ['sale.ended', sale.ended !== null && sale.cancelled === null ? 1 : 0],
  ];
  for (const [type, expected] of expectEvents) {
    const actual = events.get(type) ?? 0;
    // a sale cancelled after its end was recorded keeps its one sale.ended event
    if (
      actual !== expected &&
      !(
        type === 'sale.ended' &&
        actual === 1 &&
        sale.ended !== null &&
        sale.cancelled !== null &&
        sale.cancelled > sale.ended
      )
    ) {
      v.push({
        invariant: 'I7',
        sale: id,
        expected,
        actual,
        message: `expected ${expected} ${type} event(s), found ${actual}`,
      });
    }
  }
  // the flag is the event (checked above); whether it is due is the rule every store audits by
  const soldOutWrong = soldOutEventViolation(id, sale.cap, sale.sold, sale.soldout ? 1 : 0);
  if (soldOutWrong) v.push(soldOutWrong);
  v.push(...cartViolations);
  return v;
}
