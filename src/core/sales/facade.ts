/** `dibs.sales`: validates every input once, then delegates to the backend's SaleBackend. */
import { z } from 'zod';
import { DibsError } from '../errors.js';
import { newId } from '../ids.js';
import { listOptionsSchema } from '../schemas.js';
import type { OutboxEvent, Page } from '../types.js';
import { parseInput } from '../validate.js';
import type { SaleBackend, SaleViolation } from './backend.js';
import { normaliseTimestamp } from './rules.js';
import {
  buyOptionsSchema,
  cartIdSchema,
  createSaleSchema,
  holdCartSchema,
  type HoldCartInput,
  customerSchema,
  holdIdSchema,
  quantitySchema,
  saleIdSchema,
  ttlSchema,
  updateSaleSchema,
  skuSchema,
  wishlistChannelsSchema,
  type CreateSaleInput,
  type UpdateSaleInput,
} from './schemas.js';
import type {
  ActivationResult,
  BuyResult,
  Cart,
  CartOrders,
  CartResult,
  Hold,
  HoldResult,
  Sale,
  WishlistChannels,
  WishlistEntry,
} from './types.js';

export class Sales {
  constructor(
    private readonly store: SaleBackend,
    private readonly kind: string,
  ) {}

  /** Creates a sale after the preflight checks (window, cap, limit ≤ cap, no overlapping sale of the SKU). */
  async create(input: CreateSaleInput): Promise<Sale> {
    const spec = parseInput(createSaleSchema, input);
    return this.store.createSale({
      ...spec,
      id: spec.id ?? newId('sale'),
      startsAt: normaliseTimestamp(spec.startsAt),
      endsAt: normaliseTimestamp(spec.endsAt),
    });
  }

  async get(id: string): Promise<Sale> {
    return this.store.getSale(saleId(id));
  }

  async list(options: { limit?: number; after?: string; sku?: string } = {}): Promise<Page<Sale>> {
    const { sku, ...page } = options;
    const parsed = parseInput(listOptionsSchema, page);
    return this.store.listSales({
      ...parsed,
      ...(sku ? { sku: parseInput(z.string().min(1).max(128), sku, 'sku') } : {}),
    });
  }

  async update(id: string, patch: UpdateSaleInput): Promise<Sale> {
    const parsed = parseInput(updateSaleSchema, patch);
    return this.store.updateSale(saleId(id), {
      ...parsed,
      ...(parsed.startsAt ? { startsAt: normaliseTimestamp(parsed.startsAt) } : {}),
      ...(parsed.endsAt ? { endsAt: normaliseTimestamp(parsed.endsAt) } : {}),
    });
  }

  async cancel(id: string): Promise<Sale> {
    return this.store.cancelSale(saleId(id));
  }

  /** Buys units outright: `not_live`, `sold_out` or `limit_reached` when it cannot. */
  async buy(id: string, customer: string, quantity = 1, options: { idempotencyKey?: string } = {}): Promise<BuyResult> {
    const { idempotencyKey } = parseInput(buyOptionsSchema, options);
    return this.store.buy(
      saleId(id),
      who(customer),
      parseInput(quantitySchema, quantity, 'quantity'),
      idempotencyKey ?? null,
    );
  }

  /** Holds units in a cart for `ttlMs`; reserving again replaces the customer's hold. */
  async reserve(
    id: string,
    customer: string,
    quantity: number,
    ttlMs: number,
    options: { idempotencyKey?: string } = {},
  ): Promise<HoldResult> {
    const { idempotencyKey } = parseInput(buyOptionsSchema, options);
    return this.store.reserve(
      saleId(id),
      who(customer),
      parseInput(quantitySchema, quantity, 'quantity'),
      parseInput(ttlSchema, ttlMs, 'ttlMs'),
      idempotencyKey ?? null,
    );
  }

  async confirm(holdId: string): Promise<BuyResult> {
    return this.store.confirmHold(hold(holdId));
  }

  async cancelHold(holdId: string): Promise<Hold> {
    return this.store.cancelHold(hold(holdId));
  }

  async hold(holdId: string): Promise<Hold> {
    return this.store.getHold(hold(holdId));
  }

  /** Active holds of a sale, soonest expiry first (only `customer`'s when given). */
  async holds(id: string, options: { customer?: string; limit?: number } = {}): Promise<Hold[]> {
    const store = this.store;
    if (!store.listHolds) throw new DibsError('unsupported', `the ${this.kind} store cannot list a sale's holds yet`);
    const limit = parseInput(z.number().int().min(1).max(1000), options.limit ?? 100, 'limit');
    return store.listHolds(saleId(id), {
      limit,
      ...(options.customer !== undefined ? { customer: who(options.customer) } : {}),
    });
  }

  /**
   * Holds units of several sales at once — every line or none — for `ttlMs`: one cart, confirmed,
   * cancelled and expired as one. A refusal names the line that failed (`details.line`).
   */
  async holdCart(input: HoldCartInput): Promise<CartResult> {
    const spec = parseInput(holdCartSchema, input);
    return this.store.holdCart({
      customer: spec.customer,
      lines: spec.lines.map((l) => ({ saleId: l.sale, quantity: l.quantity })),
      ttlMs: spec.ttlMs,
      idempotencyKey: spec.idempotencyKey ?? null,
    });
  }

  /** Turns every line of an active cart into an order, in one step; a confirmed cart replays its orders. */
  async confirmCart(cartId: string): Promise<CartOrders> {
    return this.store.confirmCart(cart(cartId));
  }

  /** Releases every line of a cart, in one step. */
  async cancelCart(cartId: string): Promise<Cart> {
    return this.store.cancelCart(cart(cartId));
  }

  async getCart(cartId: string): Promise<Cart> {
    return this.store.getCart(cart(cartId));
  }

  /** The hold-expiry sweep (the service runs it as a job); returns how many holds expired. */
  async expireHolds(limit = 1000): Promise<number> {
    return this.store.expireHolds(parseInput(z.number().int().min(1).max(100_000), limit, 'limit'));
  }

  /** Registers interest in a SKU: notified on every channel given when a sale of it goes live. */
  async wish(sku: string, customer: string, channels: WishlistChannels): Promise<WishlistEntry> {
    return this.store.addToWishlist(
      parseInput(skuSchema, sku, 'sku'),
      who(customer),
      parseInput(wishlistChannelsSchema, channels, 'channels'),
    );
  }

  async unwish(sku: string, customer: string): Promise<void> {
    return this.store.removeFromWishlist(parseInput(skuSchema, sku, 'sku'), who(customer));
  }

  async wishlist(sku: string, options: { limit?: number; after?: string } = {}): Promise<Page<WishlistEntry>> {
    return this.store.listWishlist(parseInput(skuSchema, sku, 'sku'), parseInput(listOptionsSchema, options));
  }

  /** Activation job: announces sales whose start has come, once each, with their wishlist notifications. */
  async activateDue(): Promise<ActivationResult> {
    return this.store.activateDue();
  }

  /** Expiration job: records the end of sales whose window has closed, once each. */
  async endDue(): Promise<string[]> {
    return this.store.endDue();
  }

  async audit(id: string): Promise<SaleViolation[]> {
    return this.store.auditSale(saleId(id));
  }

  async events(options: { after?: string; limit?: number; sale?: string } = {}): Promise<OutboxEvent[]> {
    const limit = parseInput(z.number().int().min(1).max(1000), options.limit ?? 100, 'limit');
    return this.store.listSaleEvents({
      limit,
      ...(options.after ? { after: options.after } : {}),
      ...(options.sale ? { sale: saleId(options.sale) } : {}),
    });
  }
}

const saleId = (id: string) => parseInput(saleIdSchema, id, 'sale');
const who = (customer: string) => parseInput(customerSchema, customer, 'customer');
const hold = (id: string) => parseInput(holdIdSchema, id, 'hold');
const cart = (id: string) => parseInput(cartIdSchema, id, 'cart');
