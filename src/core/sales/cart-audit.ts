/**
 * The audit's cart rule (I9), decided here once; every store reads its carts and their lines in
 * the same snapshot as the rest of a sale's audit and hands them to `cartViolations`.
 *
 * A cart is all or nothing on the store too, not only in the answers its steps give: its lines are
 * exactly the lines it was asked for (the request it keeps as its fingerprint: same count, sale,
 * quantity, in order, each sale once), each held for the cart's customer with the cart's one
 * expiry; every line is in the cart's state — all held, all confirmed, all cancelled or all expired
 * — save a line cancelled with its cancelled sale (the one way a held or expired cart has a line
 * that is not); and a line became exactly one order, of its quantity, when and only when the cart
 * was confirmed. The per-customer limit needs no rule of its own: a line is a hold, and the sale's
 * I2 check already counts it.
 */
import type { SaleViolation } from './backend.js';
import { cartRequest, cartStatus } from './carts.js';
import type { CartStatus, HoldStatus } from './types.js';

/** A cart as stored. Instants are epoch milliseconds of the store's clock. */
export interface AuditedCart {
  id: string;
  customer: string;
  /** As stored ('expired' is never stored: the clock makes it). */
  status: 'active' | 'confirmed' | 'cancelled';
  expiresAt: number;
  /** The request it was held for (`cartFingerprint`): the lines it must have. */
  fingerprint: string | null;
}

/** One line of a cart, with everything the store links to it. */
export interface AuditedLine {
  /** The line's place in the cart (0-based), as the store records it. */
  position: number;
  holdId: string;
  /** The line as the cart's own record lists it, on stores that keep such a list (Redis, Firestore). */
  listed?: { saleId: string; quantity: number };
  /** Null when the store has no hold of that id. */
  hold: {
    saleId: string;
    customer: string;
    quantity: number;
    /** As stored: an active hold past its expiry is expired by the clock. */
    status: HoldStatus;
    expiresAt: number;
    orderId: string | null;
  } | null;
  /** The line's sale is cancelled: its holds were cancelled with it, this line too. */
  saleCancelled: boolean;
  /** Every order made from this line's hold. */
  orders: { id: string; customer: string; quantity: number }[];
}

const iso = (ms: number) => new Date(ms).toISOString();

/** A hold's status with the clock applied, as a cart's is. */
function lineStatus(hold: NonNullable<AuditedLine['hold']>, now: number): HoldStatus {
  return hold.status === 'active' && hold.expiresAt <= now ? 'expired' : hold.status;
}

/** The states a line of a cart in `status` may be in. */
function allowedLineStates(status: CartStatus, saleCancelled: boolean): HoldStatus[] {
  // a cancelled sale cancels its holds, cart lines included; the cart keeps its other lines
  const withSale: HoldStatus[] = saleCancelled ? ['cancelled'] : [];
  switch (status) {
    case 'active':
      return ['active', ...withSale];
    case 'expired':
      return ['expired', ...withSale];
    case 'confirmed':
      return ['confirmed'];
    case 'cancelled':
      return ['cancelled'];
  }
}

/**
 * I9 findings for one cart found while auditing `sale`: `cart` is null when holds name a cart the
 * store does not have; `lines` are every hold that names the cart (or that its record lists).
 * `now`: the snapshot's clock (ms). Empty = the cart is whole.
 */
export function cartViolations(
  sale: string,
  cartId: string,
  cart: AuditedCart | null,
  lines: readonly AuditedLine[],
  now: number,
): SaleViolation[] {
  const v: SaleViolation[] = [];
  const say = (message: string, more: { expected?: unknown; actual?: unknown } = {}) =>
    v.push({ invariant: 'I9', sale, cart: cartId, message: `cart '${cartId}' ${message}`, ...more });
  if (cart === null) {
    say(`is named by hold(s) ${lines.map((l) => `'${l.holdId}'`).join(', ')} but does not exist`);
    return v;
  }
  const status = cartStatus(cart.status, iso(cart.expiresAt), iso(now));
  const asked = cart.fingerprint === null ? null : cartRequest(cart.fingerprint);
  if (asked === null) say('keeps no record of the lines it was held with');
  else {
    if (asked.customer !== cart.customer)
      say(`belongs to '${cart.customer}' but was held for '${asked.customer}'`, {
        expected: asked.customer,
        actual: cart.customer,
      });
    if (lines.length !== asked.lines.length)
      say(`was held with ${asked.lines.length} line(s) but has ${lines.length}`, {
        expected: asked.lines.length,
        actual: lines.length,
      });
    asked.lines.forEach((want, i) => {
      if (!lines.some((l) => l.position === i)) say(`has no line ${i} (${want.quantity} of sale '${want.saleId}')`);
    });
  }
  const seenAt = new Map<number, string>();
  const seenSale = new Map<string, number>();
  for (const line of lines) {
    const at = `line ${line.position}`;
    const twice = seenAt.get(line.position);
    if (twice !== undefined) say(`has two holds at ${at}: '${twice}' and '${line.holdId}'`);
    seenAt.set(line.position, line.holdId);
    const want = asked?.lines[line.position];
    if (asked !== null && want === undefined) say(`${at} (hold '${line.holdId}') was never asked for`);
    const hold = line.hold;
    if (hold === null) {
      say(`${at}: hold '${line.holdId}' does not exist`);
      continue;
    }
    const otherLine = seenSale.get(hold.saleId);
    if (otherLine !== undefined) say(`holds sale '${hold.saleId}' on line ${otherLine} and on ${at}`);
    seenSale.set(hold.saleId, line.position);
    if (want && (want.saleId !== hold.saleId || want.quantity !== hold.quantity))
      say(
        `${at}: hold '${line.holdId}' has ${hold.quantity} of sale '${hold.saleId}', the cart was asked for ${want.quantity} of sale '${want.saleId}'`,
        {
          expected: want.quantity,
          actual: hold.quantity,
        },
      );
    if (line.listed && (line.listed.saleId !== hold.saleId || line.listed.quantity !== hold.quantity))
      say(
        `${at}: lists ${line.listed.quantity} of sale '${line.listed.saleId}' but hold '${line.holdId}' has ${hold.quantity} of sale '${hold.saleId}'`,
        {
          expected: line.listed.quantity,
          actual: hold.quantity,
        },
      );
    if (hold.customer !== cart.customer)
      say(`${at}: hold '${line.holdId}' is held for '${hold.customer}', the cart for '${cart.customer}'`);
    if (hold.expiresAt !== cart.expiresAt)
      say(`${at}: hold '${line.holdId}' expires at ${iso(hold.expiresAt)}, the cart at ${iso(cart.expiresAt)}`, {
        expected: iso(cart.expiresAt),
        actual: iso(hold.expiresAt),
      });
    const state = lineStatus(hold, now);
    const allowed = allowedLineStates(status, line.saleCancelled);
    if (!allowed.includes(state))
      say(`is ${status} but its ${at} (sale '${hold.saleId}', hold '${line.holdId}') is ${state}`, {
        expected: allowed.join(' or '),
        actual: state,
      });
    const orders = status === 'confirmed' ? 1 : 0;
    if (line.orders.length !== orders)
      say(`is ${status} but its ${at} (sale '${hold.saleId}') became ${line.orders.length} order(s)`, {
        expected: orders,
        actual: line.orders.length,
      });
    const order = line.orders.length === 1 ? line.orders[0]! : null;
    if (order && status === 'confirmed') {
      if (order.quantity !== hold.quantity || order.customer !== cart.customer)
        say(
          `${at}: order '${order.id}' is ${order.quantity} for '${order.customer}', the line ${hold.quantity} for '${cart.customer}'`,
          {
            expected: hold.quantity,
            actual: order.quantity,
          },
        );
      if (hold.orderId !== order.id)
        say(`${at}: hold '${line.holdId}' names order '${hold.orderId ?? 'none'}', but '${order.id}' was made from it`);
    }
  }
  return v;
}

/**
 * I9 over every cart with a line on the audited sale: `carts` as stored (by id), `lines` every
 * hold naming one of those carts (or listed by one), grouped by cart id.
 */
export function cartsViolations(
  sale: string,
  carts: ReadonlyMap<string, AuditedCart>,
  lines: ReadonlyMap<string, readonly AuditedLine[]>,
  now: number,
): SaleViolation[] {
  const ids = [...new Set([...carts.keys(), ...lines.keys()])].sort();
  return ids.flatMap((id) => cartViolations(sale, id, carts.get(id) ?? null, lines.get(id) ?? [], now));
}
