import type { OutboxEvent, Page } from '../types.js';
import type {
  ActivationResult,
  BuyResult,
  Cart,
  CartOrders,
  CartResult,
  CartSpec,
  Hold,
  HoldResult,
  Sale,
  SalePatch,
  SaleSpec,
  WishlistChannels,
  WishlistEntry,
} from './types.js';

export interface SaleViolation {
  /** I9: a cart is all or nothing in the store too (cart-audit.ts). */
  invariant: 'I2' | 'I3' | 'I4' | 'I7' | 'I9';
  sale: string;
  message: string;
  customer?: string;
  /** The cart an I9 finding is about. */
  cart?: string;
  expected?: unknown;
  actual?: unknown;
}

/**
 * Flash sales. As with pools, inputs arrive validated; every rule (window, cap, per-customer
 * limit, idempotency, hold expiry) is checked inside ONE atomic step with the backend's clock.
 * Expired holds stop counting at once: each step first expires the sale's stale holds.
 */
export interface SaleBackend {
  /** Runs `assertPreflight` in the same step as the insert. Throws `already_exists`, `invalid_input`. */
  createSale(spec: SaleSpec): Promise<Sale>;
  getSale(id: string): Promise<Sale>;
  /** Ordered by id; `after` is the id of the last sale of the previous page. */
  listSales(options: { limit: number; after?: string; sku?: string }): Promise<Page<Sale>>;
  /** Re-runs the preflight on the merged definition; a cap below sold + held is refused. */
  updateSale(id: string, patch: SalePatch): Promise<Sale>;
  /** Stops the sale for good; active holds are cancelled. Idempotent. */
  cancelSale(id: string): Promise<Sale>;

  /**
   * Buys `quantity` units directly. Throws `not_live` (scheduled/ended/cancelled), `sold_out`
   * (fewer units available than asked — nothing is sold), `limit_reached` (orders + own holds
   * + quantity over the per-customer limit). A replayed key returns the original order; a key
   * reused for another customer/quantity/kind is a `conflict`.
   */
  buy(saleId: string, customer: string, quantity: number, idempotencyKey: string | null): Promise<BuyResult>;
  /**
   * Holds units for `ttlMs`. A customer has at most one active hold per sale: reserving again
   * replaces it (new quantity and expiry). Capped sales: quantity ≤ cap − sold − holds of everyone
   * else, else `sold_out`. Unlimited sales: holds are advisory and never refused for stock.
   */
  reserve(
    saleId: string,
    customer: string,
    quantity: number,
    ttlMs: number,
    idempotencyKey: string | null,
  ): Promise<HoldResult>;
  /** Turns an active hold into an order. A confirmed hold replays its order; expired → `hold_expired`; cancelled → `conflict`. */
  confirmHold(holdId: string): Promise<BuyResult>;
  /** Releases an active hold. Idempotent for cancelled/expired holds; a confirmed hold → `conflict`. */
  cancelHold(holdId: string): Promise<Hold>;
  getHold(holdId: string): Promise<Hold>;
  /**
   * Active, unexpired holds of a sale (by the store's clock), soonest expiry first, at most
   * `limit`; only `customer`'s (at most one) when given. `not_found` for an unknown sale. Optional
   * (Firestore has none yet): without it the facade answers `unsupported`.
   */
  listHolds?(saleId: string, options: { limit: number; customer?: string }): Promise<Hold[]>;
  /** The sweep job: expires up to `limit` stale holds across all sales, recording `hold.expired` events. */
  expireHolds(limit: number): Promise<number>;

  /** Adds or replaces a customer's wish for a SKU. */
  addToWishlist(sku: string, customer: string, channels: WishlistChannels): Promise<WishlistEntry>;
  /** Throws `not_found` when the customer has no wish for the SKU. */
  removeFromWishlist(sku: string, customer: string): Promise<void>;
  listWishlist(sku: string, options: { limit: number; after?: string }): Promise<Page<WishlistEntry>>;
  /**
   * The activation job: every sale whose start has come (and that is neither cancelled nor over)
   * is announced exactly once — in one atomic step it is marked announced, a `sale.live` event
   * is recorded and one `sale.live.notify` event per wishlister and channel. Safe to run from
   * several processes at once.
   */
  activateDue(): Promise<ActivationResult>;
  /** The expiration job: records `sale.ended` once per sale whose end has come (its unexpired holds stay confirmable until they expire). */
  endDue(): Promise<string[]>;

  /**
   * Holds every line of a cart in ONE atomic step, or none: each line is judged as `reserve`
   * judges it (window, per-customer limit counting the customer's orders and holds, the cap) and
   * the first line that fails fails the cart, naming it (`details.line`). A line on a sale where
   * the customer already holds units is `conflict` (`cart_line_held`); a sale behind a waiting
   * room is `ticket_required`.
   */
  holdCart(spec: CartSpec): Promise<CartResult>;
  /** Turns every line into an order in one step. Replays a confirmed cart; expired → `hold_expired`. */
  confirmCart(cartId: string): Promise<CartOrders>;
  /** Releases every line in one step. Idempotent for cancelled/expired carts; confirmed → `conflict`. */
  cancelCart(cartId: string): Promise<Cart>;
  getCart(cartId: string): Promise<Cart>;

  /**
   * I2 (per-customer limit), I3 (sold + held ≤ cap), I4 (counters = orders/holds), I7 (events), I9
   * (every cart with a line on the sale is whole: `cartsViolations`), in one snapshot.
   */
  auditSale(id: string): Promise<SaleViolation[]>;
  listSaleEvents(options: { after?: string; limit: number; sale?: string }): Promise<OutboxEvent[]>;
}
