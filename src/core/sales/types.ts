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
