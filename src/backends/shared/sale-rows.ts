/**
 * Rows of the SQL stores' sale_holds, sale_orders and sale_keys tables (PostgreSQL and SQLite share
 * the columns) and the one mapping of each to the API's shape. `T` is how the driver hands over a
 * timestamp: a Date from pg, ISO 8601 text from SQLite.
 */
import type { Hold, Order } from '../../core/sales/types.js';

export interface HoldRowOf<T> {
  id: string;
  sale_id: string;
  customer: string;
  quantity: number;
  status: Hold['status'];
  expires_at: T;
  created_at: T;
  order_id: string | null;
  /** The cart this hold is a line of (not in every read). */
  cart_id?: string | null;
}

export interface OrderRowOf<T> {
  id: string;
  sale_id: string;
  customer: string;
  quantity: number;
  hold_id: string | null;
  created_at: T;
}

/** A sale_keys row: the request a key was first used for, and the order or hold it made. */
export interface SaleKeyRow {
  kind: 'buy' | 'reserve';
  customer: string;
  quantity: number;
  result_id: string;
}

export function holdFromRow<T>(row: HoldRowOf<T>, time: (t: T) => string): Hold {
  return {
    id: row.id,
    saleId: row.sale_id,
    customer: row.customer,
    quantity: row.quantity,
    status: row.status,
    expiresAt: time(row.expires_at),
    createdAt: time(row.created_at),
    orderId: row.order_id,
  };
}

export function orderFromRow<T>(row: OrderRowOf<T>, time: (t: T) => string): Order {
  return {
    id: row.id,
    saleId: row.sale_id,
    customer: row.customer,
    quantity: row.quantity,
    holdId: row.hold_id,
    createdAt: time(row.created_at),
  };
}
