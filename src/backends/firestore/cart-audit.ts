/**
 * The cart part of a sale's audit on Firestore (the rule: core/sales/cart-audit.ts): every cart
 * with a line on the sale, read inside the audit's own read-only snapshot — the cart documents,
 * every hold they list, each line's sale (cancelled or not) and the orders made from each line.
 */
import type { Transaction } from '@google-cloud/firestore';
import type { SaleViolation } from '../../core/sales/backend.js';
import { cartsViolations, type AuditedCart, type AuditedLine } from '../../core/sales/cart-audit.js';
import type { Layout } from './layout.js';
import type { HoldDoc, OrderDoc, SaleDoc } from './sale-records.js';

/** A cart document (carts.ts). */
interface CartDoc {
  id: string;
  c: string;
  s: AuditedCart['status'];
  e: number;
  f?: string;
  l: { sale: string; q: number; h: string }[];
}

const push = <K, V>(map: Map<K, V[]>, key: K, value: V) => {
  const list = map.get(key);
  if (list) list.push(value);
  else map.set(key, [value]);
};

/** Firestore's `in` filter takes at most 30 values. */
const IN_LIMIT = 30;

/**
 * I9 over every cart named by one of `holds` (the audited sale's holds, read in `tx`), at `now`
 * (the snapshot's read time, ms).
 */
export async function auditCartsOfSale(
  tx: Transaction,
  layout: Layout,
  sale: string,
  holds: readonly HoldDoc[],
  now: number,
): Promise<SaleViolation[]> {
  // the sale's holds of each cart, in one pass (a cart has at most one line on a sale)
  const ofCart = new Map<string, HoldDoc[]>();
  for (const h of holds) if (h.cart) push(ofCart, h.cart, h);
  const ids = [...ofCart.keys()];
  if (ids.length === 0) return [];
  const cartSnaps = await tx.getAll(...ids.map((id) => layout.root.collection('carts').doc(id)));
  const carts = new Map<string, CartDoc>();
  for (const snap of cartSnaps) if (snap.exists) carts.set(snap.id, snap.data() as CartDoc);

  // the holds the carts list, and the audited sale's holds that name a cart without being listed
  const listed = [...carts.values()].flatMap((c) => c.l);
  const listedIds = new Set(listed.map((l) => l.h));
  const holdById = new Map<string, HoldDoc>();
  if (listedIds.size > 0)
    for (const snap of await tx.getAll(...[...listedIds].map((h) => layout.hold(h))))
      if (snap.exists) holdById.set(snap.id, snap.data() as HoldDoc);
  const saleIds = [...new Set([sale, ...listed.map((l) => l.sale)])];
  const cancelled = new Set<string>();
  for (const snap of await tx.getAll(...saleIds.map((s) => layout.sale(s).sale)))
    if (snap.exists && (snap.data() as SaleDoc).cancelled !== null) cancelled.add(snap.id);
  // the orders made from each line: per sale, `in` queries over its lines' hold ids
  const holdsOfSale = new Map<string, string[]>();
  for (const l of listed) push(holdsOfSale, l.sale, l.h);
  for (const h of holds) if (h.cart && !listedIds.has(h.id)) push(holdsOfSale, sale, h.id);
  const ordersOf = new Map<string, AuditedLine['orders']>();
  for (const [s, hs] of holdsOfSale)
    for (let i = 0; i < hs.length; i += IN_LIMIT)
      for (const doc of (await tx.get(layout.sale(s).orders.where('h', 'in', hs.slice(i, i + IN_LIMIT)))).docs) {
        const o = doc.data() as OrderDoc;
        push(ordersOf, o.h!, { id: o.id, customer: o.c, quantity: o.q });
      }

  const audited = new Map<string, AuditedCart>();
  const lines = new Map<string, AuditedLine[]>();
  const lineOf = (position: number, holdId: string, hold: HoldDoc | undefined, saleId: string): AuditedLine => ({
    position,
    holdId,
    hold: hold
      ? { saleId: hold.sale, customer: hold.c, quantity: hold.q, status: hold.s, expiresAt: hold.e, orderId: hold.o }
      : null,
    saleCancelled: cancelled.has(saleId),
    orders: ordersOf.get(holdId) ?? [],
  });
  for (const id of ids) {
    const cart = carts.get(id);
    const own: AuditedLine[] = [];
    if (cart) {
      audited.set(id, { id, customer: cart.c, status: cart.s, expiresAt: cart.e, fingerprint: cart.f ?? null });
      cart.l.forEach((l, i) =>
        own.push({ ...lineOf(i, l.h, holdById.get(l.h), l.sale), listed: { saleId: l.sale, quantity: l.q } }),
      );
    }
    for (const h of ofCart.get(id)!) if (!listedIds.has(h.id)) own.push(lineOf(own.length, h.id, h, sale));
    lines.set(id, own);
  }
  return cartsViolations(sale, audited, lines, now);
}
