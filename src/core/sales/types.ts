/** Flash sales: a time window, a hard unit cap, a per-customer limit, cart holds with a TTL. */

export type SaleStatus = 'scheduled' | 'live' | 'ended' | 'sold_out' | 'cancelled';

export interface SaleStats {
  /** Units in confirmed orders. */
  sold: number;
  /** Units in active, unexpired holds (for an unlimited sale these are advisory). */
  held: number;
  /** cap − sold − held for a capped sale; null when unlimited. */
  available: number | null;
}

export interface Sale {
  id: string;
  sku: string;
  startsAt: string;
  endsAt: string;
  /** Units for sale; null = unlimited. */
  cap: number | null;
  perCustomerLimit: number;
  metadata: Record<string, unknown>;
  /** Derived from the backend's clock, the window, cancellation and stock at the moment of reading. */
  status: SaleStatus;
  cancelledAt: string | null;
  createdAt: string;
  stats: SaleStats;
}

export interface SaleSpec {
  id: string;
  sku: string;
  startsAt: string;
  endsAt: string;
  cap: number | null;
  perCustomerLimit: number;
  metadata: Record<string, unknown>;
}

export interface SalePatch {
  startsAt?: string;
  endsAt?: string;
  cap?: number | null;
  perCustomerLimit?: number;
  metadata?: Record<string, unknown>;
}

export interface Order {
  id: string;
  saleId: string;
  customer: string;
  quantity: number;
  /** The hold this order confirmed, if it came from one. */
  holdId: string | null;
  createdAt: string;
}

export type HoldStatus = 'active' | 'confirmed' | 'cancelled' | 'expired';

export interface Hold {
  id: string;
  saleId: string;
  customer: string;
  quantity: number;
  status: HoldStatus;
  expiresAt: string;
  createdAt: string;
  /** The order it became, once confirmed. */
  orderId: string | null;
}

export interface BuyResult {
  order: Order;
  /** True when this is the stored answer of an earlier call with the same idempotency key. */
  replayed: boolean;
}

export interface HoldResult {
  hold: Hold;
  replayed: boolean;
}

/** A browser push subscription as returned by `PushManager.subscribe()`. */
export interface PushSubscription {
  endpoint: string;
  keys: { p256dh: string; auth: string };
}

/** Where a wishlister wants to hear that a sale of their SKU went live. */
export interface WishlistChannels {
  email?: string;
  webPush?: PushSubscription;
  webhook?: string;
}

export interface WishlistEntry {
  sku: string;
  customer: string;
  channels: WishlistChannels;
  createdAt: string;
}

export interface ActivationResult {
  /** Sales announced as live by this run. */
  sales: string[];
  /** Notification events written to the outbox (one per wishlister and channel). */
  notifications: number;
}

/**
 * A cart: units of several sales held in one step — every line or none — that are confirmed,
 * cancelled and expire as one. Each line is a hold of its sale (counted against that sale's cap
 * and the customer's per-customer limit like any hold); all lines share the cart's expiry.
 */
export type CartStatus = 'active' | 'confirmed' | 'cancelled' | 'expired';

export interface CartLine {
  saleId: string;
  quantity: number;
  /** The hold that keeps this line's units. */
  holdId: string;
  /** The order the line became, once the cart is confirmed. */
  orderId: string | null;
}

export interface Cart {
  id: string;
  customer: string;
  /** Derived from the store's clock: an active cart past `expiresAt` is `expired`. */
  status: CartStatus;
  /** In the order they were given. */
  lines: CartLine[];
  expiresAt: string;
  createdAt: string;
}

export interface CartResult {
  cart: Cart;
  /** True when this is the stored answer of an earlier call with the same idempotency key. */
  replayed: boolean;
}

export interface CartOrders {
  cart: Cart;
  /** One order per line, in line order. */
  orders: Order[];
  /** True when the cart was already confirmed (the orders are the ones it became then). */
  replayed: boolean;
}

/** A cart request as the backend receives it: validated, no sale twice. */
export interface CartSpec {
  customer: string;
  lines: { saleId: string; quantity: number }[];
  ttlMs: number;
  idempotencyKey: string | null;
}
