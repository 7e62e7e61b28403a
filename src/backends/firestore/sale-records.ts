/**
 * Document shapes of flash sales on Firestore (layout.ts, docs/firestore.md) and their conversion
 * to dibs' domain types. Instants that queries compare (expiries, due times) are epoch
 * milliseconds of the server's clock; instants only shown are ISO strings.
 */
import type { Hold, Order, Sale, WishlistChannels, WishlistEntry } from '../../core/sales/types.js';
import { saleStatus } from '../../core/sales/rules.js';
import type { SaleState } from '../../core/model/sales.js';

export interface SaleDoc {
  id: string;
  sku: string;
  starts: string;
  ends: string;
  /** null = unlimited. */
  cap: number | null;
  limit: number;
  meta: Record<string, unknown>;
  cancelled: string | null;
  created: string;
  /** Units in orders. */
  sold: number;
  /** Units in active holds (stale ones included until a step expires them). */
  held: number;
  announced: string | null;
  ended: string | null;
  /** The sale.sold_out event was recorded. */
  soldout: boolean;
  /** Activation due (start ms), present until announced or cancelled. */
  ad?: number;
  /** End due (end ms), present until the end is recorded. */
  ed?: number;
  /** No active hold expires before this (ms, a lower bound); absent when the sale has no active hold. */
  ne?: number;
  /** Steps written so far (each write of the sale document counts one; absent = 0). */
  sq?: number;
  /** The ids of the last STEP_RING steps, newest last: how a step whose commit answer was lost is settled (sale-step.ts). */
  sts?: string[];
}

export interface CustomerDoc {
  c: string;
  /** Units ordered. */
  o: number;
  /** The customer's active hold (id, quantity, expiry ms), or null. */
  h: string | null;
  hq: number;
  he: number;
}

export interface HoldDoc {
  id: string;
  sale: string;
  c: string;
  q: number;
  s: Hold['status'];
  /** Expiry, ms. */
  e: number;
  /** Created, ms. */
  ca: number;
  o: string | null;
  /** = e while active (absent otherwise): the stale-hold queries look only at active holds. */
  ae?: number;
  /** The cart this hold is a line of (carts.ts). */
  cart?: string;
}

export interface OrderDoc {
  id: string;
  c: string;
  q: number;
  h: string | null;
  at: string;
}

export interface SaleKeyDoc {
  k: 'buy' | 'reserve';
  c: string;
  q: number;
  /** Order or hold id. */
  r: string;
}

export interface WishDoc {
  customer: string;
  ch: WishlistChannels;
  at: string;
}

export interface SkuDoc {
  sku: string;
  /** Non-cancelled sales of the SKU: id -> window (ISO). */
  sales: Record<string, { s: string; e: string }>;
}

export const isoMs = (ms: number) => new Date(ms).toISOString();

export function statusOf(doc: SaleDoc, now: string): Sale['status'] {
  return saleStatus(
    { startsAt: doc.starts, endsAt: doc.ends, cancelledAt: doc.cancelled, cap: doc.cap, sold: doc.sold },
    now,
  );
}

/** The sale as the model judges it (core/model/sales.ts). */
export function saleState(doc: SaleDoc): SaleState {
  return {
    id: doc.id,
    startsAt: doc.starts,
    endsAt: doc.ends,
    cancelledAt: doc.cancelled,
    cap: doc.cap,
    perCustomerLimit: doc.limit,
    sold: doc.sold,
    held: doc.held,
  };
}

/** `held`: units of active holds that have not expired by `now` (the step's or snapshot's). */
export function toSale(doc: SaleDoc, now: string, held: number): Sale {
  return {
    id: doc.id,
    sku: doc.sku,
    startsAt: doc.starts,
    endsAt: doc.ends,
    cap: doc.cap,
    perCustomerLimit: doc.limit,
    metadata: doc.meta ?? {},
    status: statusOf(doc, now),
    cancelledAt: doc.cancelled,
    createdAt: doc.created,
    stats: { sold: doc.sold, held, available: doc.cap === null ? null : Math.max(0, doc.cap - doc.sold - held) },
  };
}

export function toHold(doc: HoldDoc): Hold {
  return {
    id: doc.id,
    saleId: doc.sale,
    customer: doc.c,
    quantity: doc.q,
    status: doc.s,
    expiresAt: isoMs(doc.e),
    createdAt: isoMs(doc.ca),
    orderId: doc.o,
  };
}

export function toOrder(saleId: string, doc: OrderDoc): Order {
  return { id: doc.id, saleId, customer: doc.c, quantity: doc.q, holdId: doc.h, createdAt: doc.at };
}

export function toWish(sku: string, doc: WishDoc): WishlistEntry {
  return { sku, customer: doc.customer, channels: doc.ch, createdAt: doc.at };
}

export const emptyCustomer = (c: string): CustomerDoc => ({ c, o: 0, h: null, hq: 0, he: 0 });
