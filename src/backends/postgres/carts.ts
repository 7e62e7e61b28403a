/**
 * All-or-nothing carts on PostgreSQL: holding, confirming and cancelling a cart are one statement
 * each, calling a server-side function (functions/cart_*.sql) that locks the cart's sale rows in id
 * order — so two carts over the same sales never deadlock — and judges every line before it writes
 * any. The lines are ordinary holds (cart_id set), so every sale step counts them.
 */
import type pg from 'pg';
import { notFound } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import type { SaleViolation } from '../../core/sales/backend.js';
import { cartFingerprint, cartKeyReused } from '../../core/sales/carts.js';
import type { Cart, CartLine, CartOrders, CartResult, CartSpec, Order } from '../../core/sales/types.js';
import { sqlCartViolations, type SqlCartLineRow } from '../shared/sql-cart-audit.js';
import { loadQueries } from '../shared/sql-files.js';
import { query } from './connection.js';
import { refusedRow } from './refused.js';

const Q = loadQueries(new URL('./carts.sql', import.meta.url), [
  'hold',
  'confirm',
  'cancel',
  'cartView',
  'ordersOfCart',
  'auditCartLines',
  'auditClock',
]);

/** A step's answer: 'ok', 'replay', 'not_found', or a refusal's reason id (core/refusals.ts) and its context. */
interface Outcome {
  outcome: string;
  ctx: Record<string, unknown> | null;
}

interface HoldOutcome extends Outcome {
  result_id: string | null;
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
    // the line that failed (and its sale) are in the context
    throw refusedRow(r.outcome, r.ctx, { customer: spec.customer });
  }

  async confirmCart(cartId: string): Promise<CartOrders> {
    const before = await this.getCart(cartId);
    const r = (await query<Outcome>(this.pool, Q.confirm, [cartId, before.lines.map(() => newId('ord'))])).rows[0]!;
    switch (r.outcome) {
      case 'ok':
      case 'replay': {
        const orders = (await query<OrderRow>(this.pool, Q.ordersOfCart, [cartId])).rows.map(toOrder);
        return { cart: await this.getCart(cartId), orders, replayed: r.outcome === 'replay' };
      }
      case 'not_found':
        throw notFound('cart', cartId);
      default:
        throw refusedRow(r.outcome, r.ctx, { cart: cartId });
    }
  }

  async cancelCart(cartId: string): Promise<Cart> {
    const { outcome } = (await query<{ outcome: string }>(this.pool, Q.cancel, [cartId])).rows[0]!;
    if (outcome === 'not_found') throw notFound('cart', cartId);
    if (outcome !== 'ok') throw refusedRow(outcome, null, { cart: cartId });
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

/**
 * The sale audit's cart rule (I9) over every cart with a line on `sale`, read with `client` — the
 * audit's own REPEATABLE READ transaction, so the carts, their holds and orders and the clock are
 * one snapshot.
 */
export async function auditCartsOfSale(client: pg.PoolClient, sale: string): Promise<SaleViolation[]> {
  const rows = (await client.query<SqlCartLineRow>(Q.auditCartLines, [sale])).rows;
  const { now } = (await client.query<{ now: Date }>(Q.auditClock)).rows[0]!;
  return sqlCartViolations(sale, rows, now);
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
