/**
 * All-or-nothing carts on SQLite: every step is one BEGIN IMMEDIATE transaction (one savepoint of
 * the shared write batch), so a line that fails rolls back the lines held before it.
 */
import { refusal } from '../../core/refusals.js';
import { notFound } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { cartFingerprint, cartKeyReused, cartStatus } from '../../core/sales/carts.js';
import type { Cart, CartOrders, CartResult, CartSpec, Order } from '../../core/sales/types.js';
import type { SqlCartLineRow } from '../shared/sql-cart-audit.js';
import { loadQueries } from '../shared/sql-files.js';
import { prepareAll, read, write, type Db, type SqliteOptions, type Statements } from './database.js';
import type { SqliteSales } from './sales.js';

const Q = loadQueries(new URL('./carts.sql', import.meta.url), [
  'cartById',
  'cartByKey',
  'insertCart',
  'setCartStatus',
  'insertCartHold',
  'cartLines',
  'auditCartLines',
]);

interface CartRow {
  id: string;
  customer: string;
  status: 'active' | 'confirmed' | 'cancelled';
  expires_at: string;
  created_at: string;
  key: string | null;
  fingerprint: string | null;
}

interface LineRow {
  id: string;
  sale_id: string;
  quantity: number;
  status: string;
  order_id: string | null;
}

export class SqliteCarts {
  private readonly stmt: Statements<typeof Q>;

  constructor(
    private readonly db: Db,
    private readonly options: SqliteOptions,
    private readonly sales: SqliteSales,
  ) {
    this.stmt = prepareAll(db, Q);
  }

  holdCart(spec: CartSpec): Promise<CartResult> {
    return write(this.db, this.options, () => {
      const now = this.sales.now();
      const fingerprint = cartFingerprint(spec);
      if (spec.idempotencyKey !== null) {
        const prior = this.stmt.cartByKey.get(spec.idempotencyKey) as CartRow | undefined;
        if (prior) {
          if (prior.fingerprint !== fingerprint) throw cartKeyReused(spec.idempotencyKey, prior.fingerprint!);
          return { cart: this.toCart(prior, now), replayed: true };
        }
      }
      const id = newId('cart');
      const expiresAt = this.sales.later(spec.ttlMs);
      this.stmt.insertCart.run({
        id,
        customer: spec.customer,
        expiresAt,
        now,
        key: spec.idempotencyKey,
        fingerprint,
      });
      spec.lines.forEach((line, i) => {
        const row = this.sales.liveSale(line.saleId, now, i);
        if (this.sales.hasWaitingRoom(line.saleId)) throw refusal('cart_line_room', { sale: line.saleId, line: i });
        const own = this.sales.activeHoldOf(line.saleId, spec.customer);
        if (own) throw refusal('cart_line_held', { sale: line.saleId, hold: own.id, line: i });
        this.sales.assertWithinLimit(row, spec.customer, line.quantity, i);
        if (row.cap !== null) {
          const available = row.cap - row.sold - row.held - row.escrow;
          if (line.quantity > available)
            throw refusal('sale_sold_out', { sale: line.saleId, available: Math.max(0, available), line: i });
        }
        this.stmt.insertCartHold.run({
          id: newId('hold'),
          sale: line.saleId,
          customer: spec.customer,
          quantity: line.quantity,
          expiresAt,
          now,
          cart: id,
          line: i,
        });
        this.sales.moveHeld(line.saleId, line.quantity);
      });
      return { cart: this.toCart(this.cart(id), now), replayed: false };
    });
  }

  confirmCart(cartId: string): Promise<CartOrders> {
    return write(this.db, this.options, () => {
      const now = this.sales.now();
      const cart = this.cart(cartId);
      if (cart.status === 'confirmed') return this.confirmed(cart, now, true);
      if (cart.status === 'cancelled') throw refusal('cart_cancelled', { cart: cartId });
      if (cart.expires_at <= now) throw refusal('cart_expired', { cart: cartId, expiresAt: cart.expires_at });
      const lines = this.lines(cartId);
      // Unexpired, so no line can be stale; a line that is not active was cancelled with its sale.
      for (const line of lines)
        if (line.status !== 'active') throw refusal('cart_line_cancelled', { cart: cartId, sale: line.sale_id });
      for (const line of lines) this.sales.confirmLine(line.id, now);
      this.stmt.setCartStatus.run({ id: cartId, status: 'confirmed' });
      return this.confirmed(this.cart(cartId), now, false);
    });
  }

  cancelCart(cartId: string): Promise<Cart> {
    return write(this.db, this.options, () => {
      const now = this.sales.now();
      const cart = this.cart(cartId);
      if (cart.status === 'confirmed') throw refusal('cart_confirmed', { cart: cartId });
      if (cart.status === 'active' && cart.expires_at > now) {
        for (const line of this.lines(cartId)) if (line.status === 'active') this.sales.releaseLine(line.id);
        this.stmt.setCartStatus.run({ id: cartId, status: 'cancelled' });
      }
      return this.toCart(this.cart(cartId), now);
    });
  }

  getCart(cartId: string): Promise<Cart> {
    return read(this.options, () =>
      this.db.transaction(() => this.toCart(this.cart(cartId), this.sales.now())).deferred(),
    );
  }

  /** What the sale audit's cart rule reads; run inside the audit's own read transaction. */
  auditRows(sale: string): SqlCartLineRow[] {
    return this.stmt.auditCartLines.all({ sale }) as SqlCartLineRow[];
  }

  private cart(id: string): CartRow {
    const row = this.stmt.cartById.get(id) as CartRow | undefined;
    if (!row) throw notFound('cart', id);
    return row;
  }

  private lines(cartId: string): LineRow[] {
    return this.stmt.cartLines.all(cartId) as LineRow[];
  }

  private confirmed(cart: CartRow, now: string, replayed: boolean): CartOrders {
    const orders: Order[] = this.lines(cart.id).map((l) => this.sales.orderOf(l.order_id!));
    return { cart: this.toCart(cart, now), orders, replayed };
  }

  private toCart(row: CartRow, now: string): Cart {
    return {
      id: row.id,
      customer: row.customer,
      status: cartStatus(row.status, row.expires_at, now),
      lines: this.lines(row.id).map((l) => ({
        saleId: l.sale_id,
        quantity: l.quantity,
        holdId: l.id,
        orderId: l.order_id,
      })),
      expiresAt: row.expires_at,
      createdAt: row.created_at,
    };
  }
}
