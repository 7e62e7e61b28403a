/**
 * The cart part of a sale's audit on the SQL stores (SQLite, PostgreSQL): both read the same three
 * queries (carts.sql: auditCarts, auditCartLines, auditCartOrders) in the audit's snapshot; this
 * turns their rows into the core rule's input (core/sales/cart-audit.ts), so both judge alike.
 */
import type { SaleViolation } from '../../core/sales/backend.js';
import { cartsViolations, type AuditedCart, type AuditedLine } from '../../core/sales/cart-audit.js';
import type { HoldStatus } from '../../core/sales/types.js';

/** SQLite answers instants as ISO text, PostgreSQL as Dates. */
type Instant = string | Date;
const ms = (at: Instant) => (typeof at === 'string' ? Date.parse(at) : at.getTime());

export interface SqlCartAuditRows {
  /** Every cart with a line on the audited sale. */
  carts: {
    id: string;
    customer: string;
    status: AuditedCart['status'];
    expires_at: Instant;
    fingerprint: string | null;
  }[];
  /** Every hold of those carts, with whether its sale is cancelled (SQLite answers 0/1). */
  lines: {
    id: string;
    sale_id: string;
    customer: string;
    quantity: number;
    status: HoldStatus;
    expires_at: Instant;
    order_id: string | null;
    cart_id: string;
    cart_line: number;
    sale_cancelled: boolean | number;
  }[];
  /** Every order made from one of those holds. */
  orders: { id: string; customer: string; quantity: number; hold_id: string }[];
}

export function sqlCartViolations(sale: string, rows: SqlCartAuditRows, now: Instant): SaleViolation[] {
  const carts = new Map<string, AuditedCart>(
    rows.carts.map((c) => [
      c.id,
      { id: c.id, customer: c.customer, status: c.status, expiresAt: ms(c.expires_at), fingerprint: c.fingerprint },
    ]),
  );
  const ordersOf = new Map<string, AuditedLine['orders']>();
  for (const o of rows.orders)
    ordersOf.set(o.hold_id, [
      ...(ordersOf.get(o.hold_id) ?? []),
      { id: o.id, customer: o.customer, quantity: o.quantity },
    ]);
  const lines = new Map<string, AuditedLine[]>();
  for (const h of rows.lines)
    lines.set(h.cart_id, [
      ...(lines.get(h.cart_id) ?? []),
      {
        position: h.cart_line,
        holdId: h.id,
        hold: {
          saleId: h.sale_id,
          customer: h.customer,
          quantity: h.quantity,
          status: h.status,
          expiresAt: ms(h.expires_at),
          orderId: h.order_id,
        },
        saleCancelled: Boolean(h.sale_cancelled),
        orders: ordersOf.get(h.id) ?? [],
      },
    ]);
  return cartsViolations(sale, carts, lines, ms(now));
}
