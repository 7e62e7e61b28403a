/**
 * The cart part of a sale's audit on the SQL stores (SQLite, PostgreSQL): both run the same query
 * (carts.sql: auditCartLines — every line of every cart with a line on the sale, with its cart and
 * its order) in the audit's snapshot; this turns its rows into the core rule's input
 * (core/sales/cart-audit.ts), so both judge alike.
 */
import type { SaleViolation } from '../../core/sales/backend.js';
import { cartsViolations, type AuditedCart, type AuditedLine } from '../../core/sales/cart-audit.js';
import type { HoldStatus } from '../../core/sales/types.js';

/** SQLite answers instants as ISO text, PostgreSQL as Dates. */
type Instant = string | Date;
const ms = (at: Instant) => (typeof at === 'string' ? Date.parse(at) : at.getTime());

/** One row of auditCartLines: a line's hold, its sale's cancellation (SQLite: 0/1), its cart, its order. */
export interface SqlCartLineRow {
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
  /** Null only if the cart row is missing. */
  c_id: string | null;
  c_customer: string;
  c_status: AuditedCart['status'];
  c_expires_at: Instant;
  c_fingerprint: string | null;
  /** Null when no order was made from the hold. */
  o_id: string | null;
  o_customer: string;
  o_quantity: number;
}

export function sqlCartViolations(sale: string, rows: readonly SqlCartLineRow[], now: Instant): SaleViolation[] {
  const carts = new Map<string, AuditedCart>();
  const lines = new Map<string, AuditedLine[]>();
  for (const r of rows) {
    if (r.c_id !== null && !carts.has(r.c_id))
      carts.set(r.c_id, {
        id: r.c_id,
        customer: r.c_customer,
        status: r.c_status,
        expiresAt: ms(r.c_expires_at),
        fingerprint: r.c_fingerprint,
      });
    const line: AuditedLine = {
      position: r.cart_line,
      holdId: r.id,
      hold: {
        saleId: r.sale_id,
        customer: r.customer,
        quantity: r.quantity,
        status: r.status,
        expiresAt: ms(r.expires_at),
        orderId: r.order_id,
      },
      saleCancelled: Boolean(r.sale_cancelled),
      orders: r.o_id === null ? [] : [{ id: r.o_id, customer: r.o_customer, quantity: r.o_quantity }],
    };
    const own = lines.get(r.cart_id);
    if (own) own.push(line);
    else lines.set(r.cart_id, [line]);
  }
  return cartsViolations(sale, carts, lines, ms(now));
}
