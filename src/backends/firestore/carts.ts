/**
 * All-or-nothing carts on Firestore: holding, confirming and cancelling a cart are ONE transaction
 * each, over every line's sale document (a SaleStep per sale: the sale's clock, lazy expiry, the
 * customer's document, the step witness), the cart document and its idempotency key. Every line is
 * judged before anything is written; a refusal throws and the transaction writes nothing. The
 * lines are ordinary holds (`cart` set), so every sale step counts them; Firestore keeps the
 * transaction atomic across documents, so no protocol with compensation is needed.
 *
 *   dibs/{prefix}/carts/{cart id}        c, s ('active'|'confirmed'|'cancelled'), e (expires ms), ca,
 *                                        f (the request's fingerprint), l: [{sale, q, h (hold id)}]
 *   dibs/{prefix}/cartKeys/{key, base64url}   r: the cart id
 */
import type { DocumentReference } from '@google-cloud/firestore';
import { DibsError, isDibsError, notFound } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { judgeReserve } from '../../core/model/sales.js';
import { atLine, refusal } from '../../core/refusals.js';
import { cartFingerprint, cartKeyReused, cartStatus } from '../../core/sales/carts.js';
import type { Cart, CartOrders, CartResult, CartSpec, Order } from '../../core/sales/types.js';
import { encodeId, type Layout } from './layout.js';
import { SaleStep } from './sale-step.js';
import { isoMs, saleState, toOrder, type CustomerDoc, type HoldDoc, type OrderDoc } from './sale-records.js';
import type { TxRunner } from './transactions.js';

interface CartDoc {
  id: string;
  c: string;
  s: 'active' | 'confirmed' | 'cancelled';
  e: number;
  ca: number;
  f: string;
  l: { sale: string; q: number; h: string }[];
}

/** Line indexes in the order of their sale ids (each sale is on one line). */
const byId = (sales: string[]) => sales.map((_, i) => i).sort((a, b) => (sales[a]! < sales[b]! ? -1 : 1));

export class FirestoreCarts {
  constructor(
    private readonly layout: Layout,
    private readonly runner: TxRunner,
  ) {}

  private cartRef(id: string): DocumentReference {
    return this.layout.root.collection('carts').doc(id);
  }

  private keyRef(key: string): DocumentReference {
    return this.layout.root.collection('cartKeys').doc(encodeId(key));
  }

  async holdCart(spec: CartSpec): Promise<CartResult> {
    const fingerprint = cartFingerprint(spec);
    const result = await this.runner.run<{ doc: CartDoc; now: number; replayed: boolean }>(async (tx, _n, attempt) => {
      if (spec.idempotencyKey !== null) {
        const prior = await tx.get(this.keyRef(spec.idempotencyKey));
        if (prior.exists) {
          const snap = await tx.get(this.cartRef(prior.get('r') as string));
          const cart = snap.data() as CartDoc;
          if (cart.f !== fingerprint) throw cartKeyReused(spec.idempotencyKey, cart.f);
          return { doc: cart, now: snap.readTime.toMillis(), replayed: true };
        }
      }
      // reads: every line's sale, its customer, the customer's own hold, stale holds — sales in id
      // order, so two carts over the same sales take their locks in one order (the emulator locks)
      const steps: SaleStep[] = [];
      const owns: (HoldDoc | undefined)[] = [];
      for (const i of byId(spec.lines.map((l) => l.saleId))) {
        const saleId = spec.lines[i]!.saleId;
        const step = await SaleStep.open(tx, this.layout, saleId).catch((error: unknown) => {
          throw isDibsError(error, 'not_found') ? refusal('cart_line_no_sale', { sale: saleId, line: i }) : error;
        });
        await step.prefetch({ customers: [spec.customer] });
        const cust = step.customer(spec.customer);
        owns[i] = cust.h !== null ? await step.hold(cust.h) : undefined;
        steps[i] = step;
      }
      // judge every line before writing any
      const now = steps[0]!.now;
      spec.lines.forEach((line, i) => {
        const step = steps[i]!;
        const own = owns[i];
        // the customer's own hold that expired unseen by the stale pass is expired here
        if (own && own.s === 'active' && own.e <= step.now) step.expire(own);
        if (own && own.s === 'active') throw refusal('cart_line_held', { sale: line.saleId, hold: own.id, line: i });
        const { units } = step.unitsOf(spec.customer);
        try {
          judgeReserve(saleState(step.sale), step.nowIso, spec.customer, units, 0, line.quantity);
        } catch (error) {
          throw error instanceof DibsError ? atLine(error, i) : error;
        }
      });
      const id = newId('cart');
      const expires = now + spec.ttlMs;
      const doc: CartDoc = { id, c: spec.customer, s: 'active', e: expires, ca: now, f: fingerprint, l: [] };
      spec.lines.forEach((line, i) => {
        const step = steps[i]!;
        const hold: HoldDoc = {
          id: newId('hold'),
          sale: line.saleId,
          c: spec.customer,
          q: line.quantity,
          s: 'active',
          e: expires,
          ca: now,
          o: null,
          ae: expires,
          cart: id,
        };
        step.putHold(hold);
        Object.assign(step.touchCustomer(spec.customer), {
          h: hold.id,
          hq: line.quantity,
          he: expires,
        } satisfies Partial<CustomerDoc>);
        const sale = step.touchSale();
        sale.held += line.quantity;
        sale.ne = Math.min(sale.ne ?? expires, expires);
        doc.l.push({ sale: line.saleId, q: line.quantity, h: hold.id });
      });
      for (const step of steps) step.commit(attempt);
      tx.set(this.cartRef(id), { ...doc });
      if (spec.idempotencyKey !== null) tx.set(this.keyRef(spec.idempotencyKey), { r: id });
      return { doc, now, replayed: false };
    });
    return { cart: await this.view(result.doc, result.now), replayed: result.replayed };
  }

  async confirmCart(cartId: string): Promise<CartOrders> {
    const result = await this.runner.run<{ cart: CartDoc; replayed: boolean; orders: Order[] | null }>(
      async (tx, _n, attempt) => {
        const snap = await tx.get(this.cartRef(cartId));
        if (!snap.exists) throw notFound('cart', cartId);
        const cart = snap.data() as CartDoc;
        if (cart.s === 'confirmed') return { cart, replayed: true, orders: null };
        if (cart.s === 'cancelled') throw refusal('cart_cancelled', { cart: cartId });
        if (cart.e <= snap.readTime.toMillis())
          throw refusal('cart_expired', { cart: cartId, expiresAt: isoMs(cart.e) });
        const steps: SaleStep[] = [];
        const holds: HoldDoc[] = [];
        for (const i of byId(cart.l.map((l) => l.sale))) {
          const line = cart.l[i]!;
          steps[i] = await SaleStep.open(tx, this.layout, line.sale);
          await steps[i]!.prefetch({ customers: [cart.c], holds: [line.h] });
          holds[i] = (await steps[i]!.hold(line.h))!;
        }
        // unexpired, so no line is stale; a line that is not active was cancelled with its sale
        const gone = holds.findIndex((h) => h.s !== 'active');
        if (gone >= 0) throw refusal('cart_line_cancelled', { cart: cartId, sale: cart.l[gone]!.sale });
        const orders: Order[] = holds.map((hold, i) => {
          const step = steps[i]!;
          step.dropActive(hold, 'confirmed');
          const order = step.insertOrder(hold.c, hold.q, hold.id);
          hold.o = order.id;
          return toOrder(hold.sale, order);
        });
        for (const step of steps) step.commit(attempt);
        cart.s = 'confirmed';
        tx.set(this.cartRef(cartId), { ...cart });
        return { cart, replayed: false, orders };
      },
    );
    const orders = result.orders ?? (await this.ordersOf(result.cart));
    return { cart: await this.view(result.cart), orders, replayed: result.replayed };
  }

  async cancelCart(cartId: string): Promise<Cart> {
    const cart = await this.runner.run<CartDoc>(async (tx, _n, attempt) => {
      const snap = await tx.get(this.cartRef(cartId));
      if (!snap.exists) throw notFound('cart', cartId);
      const doc = snap.data() as CartDoc;
      if (doc.s === 'confirmed') throw refusal('cart_confirmed', { cart: cartId });
      if (doc.s === 'cancelled' || doc.e <= snap.readTime.toMillis()) return doc;
      const steps: SaleStep[] = [];
      for (const i of byId(doc.l.map((l) => l.sale))) {
        steps[i] = await SaleStep.open(tx, this.layout, doc.l[i]!.sale);
        await steps[i]!.prefetch({ customers: [doc.c], holds: [doc.l[i]!.h] });
      }
      for (const [i, line] of doc.l.entries()) {
        const hold = (await steps[i]!.hold(line.h))!;
        if (hold.s === 'active') steps[i]!.dropActive(hold, 'cancelled');
      }
      for (const step of steps) step.commit(attempt);
      doc.s = 'cancelled';
      tx.set(this.cartRef(cartId), { ...doc });
      return doc;
    });
    return this.view(cart);
  }

  async getCart(cartId: string): Promise<Cart> {
    const snap = await this.cartRef(cartId).get();
    if (!snap.exists) throw notFound('cart', cartId);
    return this.view(snap.data() as CartDoc, snap.readTime.toMillis());
  }

  /** The cart as read at `now` (the server's clock; default: a fresh read's), with each line's order. */
  private async view(doc: CartDoc, now?: number): Promise<Cart> {
    const snaps = await this.layout.db.getAll(...doc.l.map((l) => this.layout.hold(l.h)));
    const at = now ?? snaps[0]!.readTime.toMillis();
    return {
      id: doc.id,
      customer: doc.c,
      status: cartStatus(doc.s, isoMs(doc.e), isoMs(at)),
      lines: doc.l.map((l, i) => ({
        saleId: l.sale,
        quantity: l.q,
        holdId: l.h,
        orderId: (snaps[i]!.get('o') as string | null | undefined) ?? null,
      })),
      expiresAt: isoMs(doc.e),
      createdAt: isoMs(doc.ca),
    };
  }

  private async ordersOf(cart: CartDoc): Promise<Order[]> {
    const holds = await this.layout.db.getAll(...cart.l.map((l) => this.layout.hold(l.h)));
    const refs = cart.l.map((l, i) => this.layout.sale(l.sale).order(holds[i]!.get('o') as string));
    const orders = await this.layout.db.getAll(...refs);
    return orders.map((o, i) => toOrder(cart.l[i]!.sale, o.data() as OrderDoc));
  }
}
