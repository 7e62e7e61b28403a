/**
 * All-or-nothing carts on PostgreSQL: holding, confirming and cancelling a cart are one statement
 * each, calling a server-side function (functions/cart_*.sql) that locks the cart's sale rows in id
 * order — so two carts over the same sales never deadlock — and judges every line before it writes
 * any. The lines are ordinary holds (cart_id set), so every sale step counts them.
 */
import type pg from 'pg';
import { notFound } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { refusal } from '../../core/refusals.js';
import { cartFingerprint, cartKeyReused } from '../../core/sales/carts.js';
import type { Cart, CartLine, CartOrders, CartResult, CartSpec, Order, SaleStatus } from '../../core/sales/types.js';
import { loadQueries } from '../shared/sql-files.js';
import { query } from './connection.js';

const Q = loadQueries(new URL('./carts.sql', import.meta.url), [
  'hold',
  'confirm',
  'cancel',
  'cartView',
  'ordersOfCart',
]);

interface HoldOutcome {
  outcome: 'replay' | 'not_found' | 'not_live' | 'ticket_required' | 'held' | 'limit_reached' | 'sold_out' | 'ok';
  line: number | null;
  status: SaleStatus | null;
  result_id: string | null;
  units: number | null;
  more: number | null;
  available: number | null;
  lim: number | null;
  fingerprint: string | null;
}

interface CartRow {
  id: string;
  customer: string;
  status: Cart['status'];
  expires_at: Date;
  created_at: Date;
  lines: CartLine[];
}

interface OrderRow {
  id: string;
  sale_id: string;
  customer: string;
  quantity: number;
  hold_id: string | null;
  created_at: Date;
}

export class PostgresCarts {
  constructor(private readonly pool: pg.Pool) {}

  async holdCart(spec: CartSpec): Promise<CartResult> {
    const fingerprint = cartFingerprint(spec);
    const r = (
      await query<HoldOutcome>(this.pool, Q.hold, [
        newId('cart'),
        spec.customer,
        spec.lines.map((l) => l.saleId),
        spec.lines.map((l) => l.quantity),
        spec.ttlMs,
        spec.idempotencyKey,
        fingerprint,
        spec.lines.map(() => newId('hold')),
      ])
    ).rows[0]!;
    if (r.outcome === 'ok' || r.outcome === 'replay') {
      if (r.outcome === 'replay' && r.fingerprint !== fingerprint)
        throw cartKeyReused(spec.idempotencyKey!, r.fingerprint!);
      return { cart: await this.getCart(r.result_id!), replayed: r.outcome === 'replay' };
    }
    const line = r.line!;
    const { saleId: sale, quantity } = spec.lines[line]!;
    switch (r.outcome) {
      case 'not_found':
        throw refusal('cart_line_no_sale', { sale, line });
      case 'not_live':
        throw refusal('sale_not_live', { sale, status: r.status!, line });
      case 'ticket_required':
        throw refusal('cart_line_room', { sale, line });
      case 'held':
        throw refusal('cart_line_held', { sale, hold: r.result_id!, line });
      case 'limit_reached':
        throw refusal('sale_limit', { sale, customer: spec.customer, units: r.units!, quantity, limit: r.lim!, line });
      case 'sold_out':
        throw refusal('sale_sold_out', { sale, available: r.available!, line });
    }
  }

  async confirmCart(cartId: string): Promise<CartOrders> {
    const before = await this.getCart(cartId);
    const r = (
      await query<{ outcome: string; result_id: string | null; expires_at: Date | null }>(this.pool, Q.confirm, [
        cartId,
        before.lines.map(() => newId('ord')),
      ])
    ).rows[0]!;
    switch (r.outcome) {
      case 'ok':
      case 'replay': {
        const orders = (await query<OrderRow>(this.pool, Q.ordersOfCart, [cartId])).rows.map(toOrder);
        return { cart: await this.getCart(cartId), orders, replayed: r.outcome === 'replay' };
      }
      case 'not_found':
        throw notFound('cart', cartId);
      case 'cancelled':
        throw refusal('cart_cancelled', { cart: cartId });
      case 'expired':
        throw refusal('cart_expired', { cart: cartId, expiresAt: r.expires_at!.toISOString() });
      default:
        throw refusal('cart_line_cancelled', { cart: cartId, sale: r.result_id! });
    }
  }

  async cancelCart(cartId: string): Promise<Cart> {
    const { outcome } = (await query<{ outcome: string }>(this.pool, Q.cancel, [cartId])).rows[0]!;
    if (outcome === 'not_found') throw notFound('cart', cartId);
    if (outcome === 'confirmed') throw refusal('cart_confirmed', { cart: cartId });
    return this.getCart(cartId);
  }

  async getCart(cartId: string): Promise<Cart> {
    const row = (await query<CartRow>(this.pool, Q.cartView, [cartId])).rows[0];
    if (!row) throw notFound('cart', cartId);
    return {
      id: row.id,
      customer: row.customer,
      status: row.status,
      lines: row.lines,
      expiresAt: row.expires_at.toISOString(),
      createdAt: row.created_at.toISOString(),
    };
  }
}

function toOrder(row: OrderRow): Order {
  return {
    id: row.id,
    saleId: row.sale_id,
    customer: row.customer,
    quantity: row.quantity,
    holdId: row.hold_id,
    createdAt: row.created_at.toISOString(),
  };
}
