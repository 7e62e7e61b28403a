/**
 * All-or-nothing carts on Firestore: holding, confirming and cancelling a cart are ONE transaction
 * each, over every line's sale document (a SaleStep per sale: the sale's clock, lazy expiry, the
 * customer's document, the step witness), the cart document and its idempotency key. Every line is
 * judged before anything is written; a refusal throws and the transaction writes nothing. The
 * lines are ordinary holds (`cart` set), so every sale step counts them; Firestore keeps the
 * commit atomic across documents, so no protocol with compensation is needed.
 *
 * The steps are optimistic, like the grouped single-sale steps (sale-queue.ts): every read is a
 * plain read, and the commit is guarded by each line's sale document (its update time as read),
 * the cart document (likewise) and the key (`create`: it must not exist yet). A cart that lost a
 * race reads everything again. Why not a pessimistic transaction: it locks every line's sale
 * document until commit, and carts holding read locks on the same sales deadlock on upgrading them
 * to write while the buys' commits wait behind them — at 80 carts over 3 sales in 4 processes every
 * attempt of every cart and grouped buy ended in the emulator's "Transaction lock timeout" (about
 * 2.4 s each) and none committed in 120 s.
 *
 *   dibs/{prefix}/carts/{cart id}        c, s ('active'|'confirmed'|'cancelled'), e (expires ms), ca,
 *                                        f (the request's fingerprint), l: [{sale, q, h (hold id)}]
 *   dibs/{prefix}/cartKeys/{key, base64url}   r: the cart id
 */
import type { DocumentReference, DocumentSnapshot, Transaction } from '@google-cloud/firestore';
import { DibsError, isDibsError, notFound } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { judgeReserve } from '../../core/model/sales.js';
import { atLine, refusal } from '../../core/refusals.js';
import { cartFingerprint, cartKeyReused, cartStatus } from '../../core/sales/carts.js';
import type { Cart, CartOrders, CartResult, CartSpec, Order } from '../../core/sales/types.js';
import { encodeId, type Layout } from './layout.js';
import { SaleStep } from './sale-step.js';
import { isoMs, saleState, toOrder, type CustomerDoc, type HoldDoc, type OrderDoc } from './sale-records.js';
import { RETRY, stillAsRead, type Attempt, type TxRunner } from './transactions.js';
import type { SaleTurns } from './sale-turns.js';

interface CartDoc {
  id: string;
  c: string;
  s: 'active' | 'confirmed' | 'cancelled';
  e: number;
  ca: number;
  f: string;
  l: { sale: string; q: number; h: string }[];
}

/** An answer that wrote nothing: a commit lost on the way changed nothing either, so it may run again. */
const nothingWritten = (attempt: Attempt<unknown>) => attempt.resolveWith(async () => 'rerun');

/**
 * The cart's new state, committed only if the cart document is still the one read. That guard also
 * settles a lost commit: running the step again is safe, whether the lost one applied (the cart
 * reads confirmed or cancelled: a replay) or not (it never can now, as the cart is read again and
 * one of the two commits fails its guard) — so the lines' step witnesses are not needed.
 */
function rewriteCart(tx: Transaction, snap: DocumentSnapshot, doc: CartDoc, attempt: Attempt<unknown>): void {
  tx.update(snap.ref, { ...doc }, { lastUpdateTime: snap.updateTime! });
  attempt.resolveWith(async () => 'rerun');
}

/**
 * A refusal judged on plain reads stands only if they were one state: if the documents that guard
 * them — each line's sale document, and the cart's — still have the update times read, nothing
 * read has moved since (every change to a sale writes its sale document, every change to a cart
 * its cart document), so the refusal is true as of now. Else another attempt judges afresh. (A
 * step that writes has its commit check the same guards; a refusal writes nothing.)
 */
async function refusedUnlessMoved(error: unknown, read: DocumentSnapshot[]): Promise<typeof RETRY> {
  if (!isDibsError(error)) throw error;
  if (await stillAsRead(read)) throw error;
  return RETRY;
}

export class FirestoreCarts {
  constructor(
    private readonly layout: Layout,
    private readonly runner: TxRunner,
    /** This process' turns on sales (sale-turns.ts): a cart runs in the turn of every line's sale. */
    private readonly turns: SaleTurns,
  ) {}

  private cartRef(id: string): DocumentReference {
    return this.layout.root.collection('carts').doc(id);
  }

  private keyRef(key: string): DocumentReference {
    return this.layout.root.collection('cartKeys').doc(encodeId(key));
  }

  async holdCart(spec: CartSpec): Promise<CartResult> {
    const fingerprint = cartFingerprint(spec);
    const since = Date.now();
    const sales = spec.lines.map((l) => l.saleId);
    const result = await this.turns.run(sales, () =>
      this.runner.run<{ doc: CartDoc; now: number; replayed: boolean }>(
        async (tx, _n, attempt) => {
          if (spec.idempotencyKey !== null) {
            const prior = await this.keyRef(spec.idempotencyKey).get();
            if (prior.exists) {
              const snap = await this.cartRef(prior.get('r') as string).get();
              const cart = snap.data() as CartDoc;
              if (cart.f !== fingerprint) throw cartKeyReused(spec.idempotencyKey, cart.f);
              nothingWritten(attempt);
              return { doc: cart, now: snap.readTime.toMillis(), replayed: true };
            }
          }
          // reads, every line at once (plain reads: the commit's guards stand for them): the line's
          // sale, its customer, the customer's own hold, stale holds
          const owns: (HoldDoc | undefined)[] = [];
          const steps = await Promise.all(
            spec.lines.map(async ({ saleId }, i) => {
              const step = await SaleStep.open(tx, this.layout, saleId, 'optimistic').catch((error: unknown) => {
                throw isDibsError(error, 'not_found') ? refusal('cart_line_no_sale', { sale: saleId, line: i }) : error;
              });
              await step.prefetch({ customers: [spec.customer] });
              const cust = step.customer(spec.customer);
              owns[i] = cust.h !== null ? await step.hold(cust.h) : undefined;
              return step;
            }),
          );
          // judge every line before writing any
          const now = steps[0]!.now;
          try {
            spec.lines.forEach((line, i) => {
              const step = steps[i]!;
              const own = owns[i];
              // the customer's own hold that expired unseen by the stale pass is expired here
              if (own && own.s === 'active' && own.e <= step.now) step.expire(own);
              // a sale behind a waiting room sells only through admitted tickets (waiting-rooms.ts)
              if (step.sale.wr) throw refusal('cart_line_room', { sale: line.saleId, line: i });
              if (own && own.s === 'active')
                throw refusal('cart_line_held', { sale: line.saleId, hold: own.id, line: i });
              const { units } = step.unitsOf(spec.customer);
              try {
                judgeReserve(saleState(step.sale), step.nowIso, spec.customer, units, 0, line.quantity);
              } catch (error) {
                throw error instanceof DibsError ? atLine(error, i) : error;
              }
            });
          } catch (error) {
            return refusedUnlessMoved(
              error,
              steps.map((step) => step.saleSnap),
            );
          }
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
          tx.create(this.cartRef(id), { ...doc });
          // a cart held meanwhile under the same key fails this commit: the next attempt replays it
          if (spec.idempotencyKey !== null) tx.create(this.keyRef(spec.idempotencyKey), { r: id });
          return { doc, now, replayed: false };
        },
        undefined,
        { optimistic: true, since },
      ),
    );
    return { cart: await this.view(result.doc, result.now), replayed: result.replayed };
  }

  async confirmCart(cartId: string): Promise<CartOrders> {
    const since = Date.now();
    const result = await this.turns.run(await this.salesOf(cartId), () =>
      this.runner.run<{ cart: CartDoc; replayed: boolean; orders: Order[] | null }>(
        async (tx, _n, attempt) => {
          const snap = await this.cartRef(cartId).get();
          if (!snap.exists) throw notFound('cart', cartId);
          const cart = snap.data() as CartDoc;
          if (cart.s === 'confirmed') {
            nothingWritten(attempt);
            return { cart, replayed: true, orders: null };
          }
          if (cart.s === 'cancelled') throw refusal('cart_cancelled', { cart: cartId });
          if (cart.e <= snap.readTime.toMillis())
            throw refusal('cart_expired', { cart: cartId, expiresAt: isoMs(cart.e) });
          const steps = await this.openLines(tx, cart);
          const holds = await Promise.all(steps.map(async (step, i) => (await step.hold(cart.l[i]!.h))!));
          // unexpired, so no line is stale; a line that is not active was cancelled with its sale
          const gone = holds.findIndex((h) => h.s !== 'active');
          if (gone >= 0)
            return refusedUnlessMoved(refusal('cart_line_cancelled', { cart: cartId, sale: cart.l[gone]!.sale }), [
              snap,
              ...steps.map((step) => step.saleSnap),
            ]);
          const orders: Order[] = holds.map((hold, i) => {
            const step = steps[i]!;
            step.dropActive(hold, 'confirmed');
            const order = step.insertOrder(hold.c, hold.q, hold.id);
            hold.o = order.id;
            return toOrder(hold.sale, order);
          });
          for (const step of steps) step.commit(attempt);
          cart.s = 'confirmed';
          rewriteCart(tx, snap, cart, attempt);
          return { cart, replayed: false, orders };
        },
        undefined,
        { optimistic: true, since },
      ),
    );
    const orders = result.orders ?? (await this.ordersOf(result.cart));
    return { cart: await this.view(result.cart), orders, replayed: result.replayed };
  }

  async cancelCart(cartId: string): Promise<Cart> {
    const since = Date.now();
    const cart = await this.turns.run(await this.salesOf(cartId), () =>
      this.runner.run<CartDoc>(
        async (tx, _n, attempt) => {
          const snap = await this.cartRef(cartId).get();
          if (!snap.exists) throw notFound('cart', cartId);
          const doc = snap.data() as CartDoc;
          if (doc.s === 'confirmed') throw refusal('cart_confirmed', { cart: cartId });
          if (doc.s === 'cancelled' || doc.e <= snap.readTime.toMillis()) {
            nothingWritten(attempt);
            return doc;
          }
          const steps = await this.openLines(tx, doc);
          for (const [i, line] of doc.l.entries()) {
            const hold = (await steps[i]!.hold(line.h))!;
            if (hold.s === 'active') steps[i]!.dropActive(hold, 'cancelled');
          }
          for (const step of steps) step.commit(attempt);
          doc.s = 'cancelled';
          rewriteCart(tx, snap, doc, attempt);
          return doc;
        },
        undefined,
        { optimistic: true, since },
      ),
    );
    return this.view(cart);
  }

  /** The sales of a cart's lines, which never change (none: no such cart, which its step answers). */
  private async salesOf(cartId: string): Promise<string[]> {
    const snap = await this.cartRef(cartId).get();
    return snap.exists ? (snap.data() as CartDoc).l.map((l) => l.sale) : [];
  }

  /** Every line's sale step, read at once, with the cart's customer and the line's hold. */
  private openLines(tx: Transaction, cart: CartDoc): Promise<SaleStep[]> {
    return Promise.all(
      cart.l.map(async (line) => {
        const step = await SaleStep.open(tx, this.layout, line.sale, 'optimistic');
        await step.prefetch({ customers: [cart.c], holds: [line.h] });
        return step;
      }),
    );
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
