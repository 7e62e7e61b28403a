/**
 * All-or-nothing carts on Redis: holding, confirming and cancelling a cart are one Lua script each
 * (scripts/cart_*.lua), which judges every line before it writes any. A cart lives in its first
 * line's sale group (its id carries that group, `cart_<gggg><random>`), each line's hold in its own
 * sale's group. A single node reaches every group from one script. On a Cluster a script runs on
 * one slot, so a cart's sales must share a group: SKUs that start with the same `{tag}` do
 * (keys.ts `saleGroupOf`); any other cart is refused before anything runs (`cart_cross_slot`).
 */
import { randomBytes } from 'node:crypto';
import { DibsError, notFound } from '../../core/errors.js';
import { newId } from '../../core/ids.js';
import { refusal } from '../../core/refusals.js';
import type { SaleViolation } from '../../core/sales/backend.js';
import { cartViolations, type AuditedCart, type AuditedLine } from '../../core/sales/cart-audit.js';
import { cartFingerprint, cartKeyReused } from '../../core/sales/carts.js';
import type { Cart, CartOrders, CartResult, CartSpec, Hold, Order } from '../../core/sales/types.js';
import { saleTag } from './keys.js';
import { refusedReply } from './refused.js';
import { runScript, type RedisClient } from './scripts.js';
import type { RedisSales } from './sales.js';

interface CartView {
  id: string;
  c: string;
  s: Cart['status'];
  e: number;
  ca: number;
  l: { sale: string; q: number; h: string; o: string | false }[];
}

interface OrderRecord {
  id: string;
  c: string;
  q: number;
  h?: string;
  at: number;
}

/** A cart as sale_audit.lua reads it: its record (or false when missing) and every line's linked records. */
export interface AuditedCartRecord {
  id: string;
  rec: { c: string; s: AuditedCart['status']; e: number; f?: string } | false;
  lines:
    | {
        h: string;
        listed: { sale: string; q: number } | false;
        hold: { sale: string; c: string; q: number; s: Hold['status']; e: number; o?: string } | false;
        sc: boolean;
        orders: OrderRecord[] | Record<string, never>;
      }[]
    | Record<string, never>;
}

/** The cart rule (core/sales/cart-audit.ts) over the carts sale_audit.lua read with a sale's audit. */
export function auditedCartViolations(sale: string, carts: AuditedCartRecord[], now: number): SaleViolation[] {
  const list = <T>(v: T[] | Record<string, never>): T[] => (Array.isArray(v) ? v : []);
  return carts.flatMap((c) => {
    const cart: AuditedCart | null = c.rec
      ? { id: c.id, customer: c.rec.c, status: c.rec.s, expiresAt: c.rec.e, fingerprint: c.rec.f ?? null }
      : null;
    const lines: AuditedLine[] = list(c.lines).map((l, position) => ({
      position,
      holdId: l.h,
      ...(l.listed ? { listed: { saleId: l.listed.sale, quantity: l.listed.q } } : {}),
      hold: l.hold
        ? {
            saleId: l.hold.sale,
            customer: l.hold.c,
            quantity: l.hold.q,
            status: l.hold.s,
            expiresAt: l.hold.e,
            orderId: l.hold.o ?? null,
          }
        : null,
      saleCancelled: l.sc,
      orders: list(l.orders).map((o) => ({ id: o.id, customer: o.c, quantity: o.q })),
    }));
    return cartViolations(sale, c.id, cart, lines, now);
  });
}

const iso = (ms: number | string) => new Date(Number(ms)).toISOString();

export class RedisCarts {
  private readonly cluster: boolean;

  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly sales: RedisSales,
  ) {
    this.cluster = (client as { isCluster?: boolean }).isCluster === true;
  }

  async holdCart(spec: CartSpec): Promise<CartResult> {
    const tags: string[] = [];
    for (const [line, { saleId }] of spec.lines.entries()) {
      tags.push(
        await this.sales.saleTagOf(saleId).catch((error: unknown) => {
          throw error instanceof DibsError && error.code === 'not_found'
            ? refusal('cart_line_no_sale', { sale: saleId, line })
            : error;
        }),
      );
    }
    if (this.cluster && new Set(tags).size > 1)
      throw refusal('cart_cross_slot', { sales: spec.lines.map((l) => l.saleId) });
    const tag = tags[0]!;
    const group = groupOfTag(tag);
    const fingerprint = cartFingerprint(spec);
    const reply = (await runScript(
      this.client,
      'cart_hold',
      [`${tag}:carts`],
      [
        tag,
        `cart_${group}${randomBytes(10).toString('hex')}`,
        spec.customer,
        spec.ttlMs,
        spec.idempotencyKey ?? '',
        fingerprint,
        spec.lines.length,
        // on a single node one hash for every key; on a Cluster the cart's slot (keys.ts)
        this.cluster ? `${tag}:ckeys` : `{${this.prefix}}:cart-keys`,
        ...spec.lines.flatMap((l, i) => [
          tags[i]!,
          l.saleId,
          l.quantity,
          `hold_${groupOfTag(tags[i]!)}${randomBytes(12).toString('hex')}`,
        ]),
      ],
    )) as string[];
    if (reply[0] === 'ok') return { cart: toCart(JSON.parse(reply[1]!) as CartView), replayed: false };
    if (reply[0] === 'replayed') {
      if (reply[2] !== fingerprint) throw cartKeyReused(spec.idempotencyKey!, reply[2]!);
      return { cart: toCart(JSON.parse(reply[1]!) as CartView), replayed: true };
    }
    // the line that failed (and its sale) are in the reply
    if (reply[0] === 'refused') throw refusedReply(reply, { customer: spec.customer });
    throw new Error(`cart_hold.lua answered ${String(reply[0])}`);
  }

  async confirmCart(cartId: string): Promise<CartOrders> {
    const tag = this.tagOf(cartId);
    const lines = (await this.getCart(cartId)).lines;
    const reply = (await runScript(
      this.client,
      'cart_confirm',
      [`${tag}:carts`],
      [tag, cartId, ...lines.map(() => newId('ord'))],
    )) as string[];
    switch (reply[0]) {
      case 'ok':
      case 'replayed': {
        const orders = (JSON.parse(reply[2]!) as { sale: string; order: OrderRecord }[]).map((o) =>
          toOrder(o.sale, o.order),
        );
        return { cart: toCart(JSON.parse(reply[1]!) as CartView), orders, replayed: reply[0] === 'replayed' };
      }
      case 'not_found':
        throw notFound('cart', cartId);
      case 'refused':
        throw refusedReply(reply, { cart: cartId });
      default:
        throw new Error(`cart_confirm.lua answered ${String(reply[0])}`);
    }
  }

  async cancelCart(cartId: string): Promise<Cart> {
    const tag = this.tagOf(cartId);
    const reply = (await runScript(this.client, 'cart_cancel', [`${tag}:carts`], [tag, cartId])) as string[];
    if (reply[0] === 'not_found') throw notFound('cart', cartId);
    if (reply[0] === 'refused') throw refusedReply(reply, { cart: cartId });
    return toCart(JSON.parse(reply[1]!) as CartView);
  }

  async getCart(cartId: string): Promise<Cart> {
    const tag = this.tagOf(cartId);
    const reply = (await runScript(this.client, 'cart_get', [`${tag}:carts`], [tag, cartId])) as string[];
    if (reply[0] === 'not_found') throw notFound('cart', cartId);
    return toCart(JSON.parse(reply[1]!) as CartView);
  }

  /** A cart id carries its group (`cart_<gggg><random>`); anything else is no cart of this store. */
  private tagOf(cartId: string): string {
    const match = /^cart_([0-9a-f]{4})[0-9a-f]{20}$/.exec(cartId);
    if (!match) throw notFound('cart', cartId);
    return saleTag(this.prefix, match[1]!);
  }
}

/** `{prefix:sg:gggg}` → `gggg`. */
const groupOfTag = (tag: string) => tag.slice(-5, -1);

function toCart(v: CartView): Cart {
  return {
    id: v.id,
    customer: v.c,
    status: v.s,
    lines: v.l.map((l) => ({ saleId: l.sale, quantity: l.q, holdId: l.h, orderId: l.o === false ? null : l.o })),
    expiresAt: iso(v.e),
    createdAt: iso(v.ca),
  };
}

function toOrder(saleId: string, rec: OrderRecord): Order {
  return { id: rec.id, saleId, customer: rec.c, quantity: rec.q, holdId: rec.h ?? null, createdAt: iso(rec.at) };
}
