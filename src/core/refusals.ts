/**
 * Every refusal a step can answer with, as a reason id, and the one factory that turns a reason and
 * its context into the `DibsError` callers see. A store's script, SQL or TypeScript step names the
 * reason (Lua and SQL return the id as text); the code, message, field and details are decided here
 * only, so the same refusal reads the same on every store.
 */
import { DibsError, type DibsErrorOptions, type ErrorCode } from './errors.js';
import type { SaleStatus } from './sales/types.js';

interface Refusal {
  code: ErrorCode;
  message: string;
  options?: DibsErrorOptions;
}

/** The request an idempotency key was first used for, as the refusal names it. */
type PriorRequest = { claimant: string; count: number } | { kind: string; quantity: number; customer: string };

const describePrior = (p: PriorRequest) =>
  'claimant' in p ? `claimant '${p.claimant}', count ${p.count}` : `${p.kind} of ${p.quantity} by '${p.customer}'`;

const RULES = {
  // --- pools ---
  pool_exists: (c: { pool: string }): Refusal => ({
    code: 'already_exists',
    message: `pool '${c.pool}' already exists`,
    options: { field: 'name' },
  }),
  pool_sold_out: (c: { pool: string }): Refusal => ({
    code: 'sold_out',
    message: `pool '${c.pool}' has no free codes left`,
    options: { details: { pool: c.pool } },
  }),
  pool_not_yet_valid: (c: { pool: string; startsAt: string | null }): Refusal => ({
    code: 'not_yet_valid',
    message: `pool '${c.pool}' opens at ${c.startsAt}`,
    options: { retriable: true, details: { startsAt: c.startsAt } },
  }),
  pool_expired: (c: { pool: string; expiresAt: string | null }): Refusal => ({
    code: 'expired',
    message: `pool '${c.pool}' expired at ${c.expiresAt}`,
    options: { details: { expiresAt: c.expiresAt } },
  }),
  code_not_yet_valid: (c: { code: string; at: string }): Refusal => ({
    code: 'not_yet_valid',
    message: `code '${c.code}' is valid from ${c.at}`,
    options: { retriable: true, field: 'code', details: { startsAt: c.at } },
  }),
  code_expired: (c: { code: string; at: string }): Refusal => ({
    code: 'expired',
    message: `code '${c.code}' expired at ${c.at}`,
    options: { field: 'code', details: { expiresAt: c.at } },
  }),
  /** An idempotency key of a claim, a buy or a reservation reused for a different request. */
  key_reused: (c: { key: string; prior: PriorRequest }): Refusal => ({
    code: 'conflict',
    message: `idempotency key '${c.key}' was already used for a different request (${describePrior(c.prior)})`,
    options: { field: 'idempotencyKey' },
  }),
  limit_below_holdings: (c: { requested: number; held: number }): Refusal => ({
    code: 'conflict',
    message: `perClaimantLimit cannot go below ${c.held}: a claimant already holds ${c.held} codes`,
    options: { field: 'perClaimantLimit', details: { maxHeld: c.held, requested: c.requested } },
  }),
  /** Release, redeem or hold of a code nobody holds (free, revoked) where a holder is needed. */
  not_held: (c: { code: string; status: string }): Refusal => ({
    code: 'conflict',
    message: `code '${c.code}' is ${c.status}, not held by anyone`,
    options: { field: 'code' },
  }),
  other_holder: (c: { code: string; claimant: string }): Refusal => ({
    code: 'conflict',
    message: `code '${c.code}' is not held by '${c.claimant}'`,
    options: { field: 'claimant' },
  }),
  redeemed_not_releasable: (c: { code: string }): Refusal => ({
    code: 'conflict',
    message: `code '${c.code}' is redeemed and cannot be released`,
    options: { field: 'code' },
  }),
  already_revoked: (c: { code: string }): Refusal => ({
    code: 'conflict',
    message: `code '${c.code}' is already revoked`,
    options: { field: 'code' },
  }),
  /** A hold or redeem of a revoked code. */
  revoked: (c: { code: string }): Refusal => ({
    code: 'conflict',
    message: `code '${c.code}' is revoked`,
    options: { field: 'code' },
  }),
  not_redeemed: (c: { code: string; status: string }): Refusal => ({
    code: 'conflict',
    message: `code '${c.code}' is ${c.status}, not redeemed`,
    options: { field: 'code' },
  }),
  other_order: (c: { code: string; orderId: string }): Refusal => ({
    code: 'conflict',
    message: `code '${c.code}' was not redeemed for order '${c.orderId}'`,
    options: { field: 'orderId' },
  }),
  already_redeemed: (c: { code: string; at: string }): Refusal => ({
    code: 'already_redeemed',
    message: `code '${c.code}' was already redeemed at ${c.at}`,
    options: { field: 'code' },
  }),
  /** Redeeming a never-claimed code of a public pool makes the redeemer its holder: name them. */
  claimant_required: (c: { code: string }): Refusal => ({
    code: 'invalid_input',
    message: `claimant: required to redeem code '${c.code}' directly (it was never claimed)`,
    options: { field: 'claimant' },
  }),
  /** The redeemer (or holder) of a public code already holds as many codes of the pool as one claimant may. */
  holder_at_limit: (c: { pool: string; claimant: string; limit: number }): Refusal => ({
    code: 'limit_reached',
    message: `claimant '${c.claimant}' already holds ${c.limit} code(s) of pool '${c.pool}', the most allowed`,
    options: { field: 'perClaimantLimit', details: { perClaimantLimit: c.limit } },
  }),
  redemptions_pool: (c: { pool: string; max: number }): Refusal => ({
    code: 'limit_reached',
    message: `pool '${c.pool}' allows ${c.max} redemptions in all, and they are used`,
    options: { field: 'maxRedemptions', details: { maxRedemptions: c.max } },
  }),
  redemptions_claimant: (c: { pool: string; claimant: string; max: number }): Refusal => ({
    code: 'limit_reached',
    message: `claimant '${c.claimant}' has redeemed ${c.max} code(s) of pool '${c.pool}', the most allowed`,
    options: { field: 'maxRedemptionsPerClaimant', details: { maxRedemptionsPerClaimant: c.max } },
  }),
  /** Another checkout holds the code (`pools.hold`) until `until`. */
  held: (c: { code: string; until: string }): Refusal => ({
    code: 'held',
    message: `code '${c.code}' is held by another checkout until ${c.until}`,
    options: { field: 'code', retriable: true, details: { until: c.until } },
  }),
  /** Holds are for single-use codes: a multi-use code has no one holder. */
  multi_use_not_holdable: (c: { code: string }): Refusal => ({
    code: 'conflict',
    message: `code '${c.code}' is a multi-use code: it cannot be held`,
    options: { field: 'code' },
  }),
  /** A multi-use code counts its uses per order: redeem and unredeem name one. */
  order_required: (c: { code: string }): Refusal => ({
    code: 'invalid_input',
    message: `orderId: required for multi-use code '${c.code}' (each use is recorded once per order)`,
    options: { field: 'orderId' },
  }),
  uses_exhausted: (c: { code: string; max: number }): Refusal => ({
    code: 'limit_reached',
    message: `code '${c.code}' has been used ${c.max} time(s), all it allows`,
    options: { field: 'uses', details: { uses: c.max } },
  }),
  uses_per_claimant: (c: { code: string; claimant: string; max: number }): Refusal => ({
    code: 'limit_reached',
    message: `claimant '${c.claimant}' has used code '${c.code}' ${c.max} time(s), the most allowed`,
    options: { field: 'usesPerClaimant', details: { usesPerClaimant: c.max } },
  }),
  /** A use of a multi-use code recorded for this order by another claimant. */
  order_of_other_claimant: (c: { code: string; orderId: string }): Refusal => ({
    code: 'conflict',
    message: `order '${c.orderId}' already used code '${c.code}' for another claimant`,
    options: { field: 'orderId' },
  }),
  code_exists: (c: { code: string }): Refusal => ({
    code: 'already_exists',
    message: `code '${c.code}' already exists in the pool`,
    options: { field: 'code' },
  }),

  // --- sales ---
  sale_cancelled: (c: { sale: string }): Refusal => ({
    code: 'conflict',
    message: `sale '${c.sale}' is cancelled`,
    options: { details: { sale: c.sale } },
  }),
  hold_cancelled: (c: { hold: string }): Refusal => ({
    code: 'conflict',
    message: `hold '${c.hold}' was cancelled`,
    options: { details: { hold: c.hold } },
  }),
  hold_confirmed: (c: { hold: string; order: string | null }): Refusal => ({
    code: 'conflict',
    message: `hold '${c.hold}' was already confirmed as order '${c.order}'`,
    options: { details: { hold: c.hold } },
  }),
  hold_expired: (c: { hold: string; expiresAt: string | null }): Refusal => ({
    code: 'hold_expired',
    message: `hold '${c.hold}' expired at ${c.expiresAt}`,
    options: { details: { hold: c.hold, expiresAt: c.expiresAt } },
  }),
  sale_exists: (c: { sale: string }): Refusal => ({
    code: 'already_exists',
    message: `sale '${c.sale}' already exists`,
    options: { field: 'id' },
  }),
  sale_not_live: (c: { sale: string; status: SaleStatus }): Refusal => ({
    code: c.status === 'sold_out' ? 'sold_out' : 'not_live',
    message: `sale '${c.sale}' is ${c.status.replace('_', ' ')}`,
    options: { details: { sale: c.sale, status: c.status } },
  }),
  sale_limit: (c: { sale: string; customer: string; units: number; quantity: number; limit: number }): Refusal => ({
    code: 'limit_reached',
    message: `customer '${c.customer}' has ${c.units} unit(s) of sale '${c.sale}'; ${c.quantity} more would exceed the limit of ${c.limit}`,
    options: { field: 'quantity', details: { sale: c.sale, customer: c.customer, units: c.units, limit: c.limit } },
  }),
  /** A sale behind a waiting room sells only through admitted tickets. */
  sale_ticket_required: (c: { sale: string }): Refusal => ({
    code: 'ticket_required',
    message: `sale '${c.sale}' has a waiting room: join it and reserve with your ticket`,
    options: { field: 'ticket' },
  }),
  sale_sold_out: (c: { sale: string; available: number }): Refusal => ({
    code: 'sold_out',
    message: `sale '${c.sale}' has ${c.available} unit(s) left`,
    options: { details: { sale: c.sale, available: c.available } },
  }),
  /**
   * A per-customer limit may be lowered only down to what a customer already has (orders and live
   * holds), as a pool's perClaimantLimit only down to what a claimant holds: what was sold under the
   * old limit is never taken back.
   */
  sale_limit_below_units: (c: { sale: string; requested: number; units: number }): Refusal => ({
    code: 'conflict',
    message: `perCustomerLimit cannot go below ${c.units}: a customer already has ${c.units} units of sale '${c.sale}' (orders and live holds)`,
    options: { field: 'perCustomerLimit', details: { sale: c.sale, maxUnits: c.units, requested: c.requested } },
  }),

  // --- carts ---
  /** A cart line on a sale where the customer already has a hold (a plain one or another cart's). */
  cart_line_held: (c: { sale: string; hold: string }): Refusal => ({
    code: 'conflict',
    message: `the customer already holds units of sale '${c.sale}' (hold '${c.hold}'): confirm or cancel that hold first`,
    options: { details: { sale: c.sale, hold: c.hold } },
  }),
  /** A cart's hold is confirmed, cancelled or replaced only with its whole cart. */
  hold_in_cart: (c: { hold: string; cart: string }): Refusal => ({
    code: 'conflict',
    message: `hold '${c.hold}' belongs to cart '${c.cart}': confirm or cancel the cart`,
    options: { details: { hold: c.hold, cart: c.cart } },
  }),
  cart_cancelled: (c: { cart: string }): Refusal => ({
    code: 'conflict',
    message: `cart '${c.cart}' was cancelled`,
    options: { details: { cart: c.cart } },
  }),
  cart_confirmed: (c: { cart: string }): Refusal => ({
    code: 'conflict',
    message: `cart '${c.cart}' was already confirmed`,
    options: { details: { cart: c.cart } },
  }),
  cart_expired: (c: { cart: string; expiresAt: string | null }): Refusal => ({
    code: 'hold_expired',
    message: `cart '${c.cart}' expired at ${c.expiresAt}`,
    options: { details: { cart: c.cart, expiresAt: c.expiresAt } },
  }),
  /** A line whose hold was cancelled with its sale: the cart cannot be confirmed whole any more. */
  cart_line_cancelled: (c: { cart: string; sale: string }): Refusal => ({
    code: 'conflict',
    message: `cart '${c.cart}': sale '${c.sale}' was cancelled, and its line with it; cancel the cart`,
    options: { details: { cart: c.cart, sale: c.sale } },
  }),
  /** A cart line names a sale that does not exist. */
  cart_line_no_sale: (c: { sale: string }): Refusal => ({
    code: 'not_found',
    message: `sale '${c.sale}' does not exist`,
    options: { field: 'sale', details: { sale: c.sale } },
  }),
  /** A sale behind a waiting room sells only through admitted tickets, never in a cart. */
  cart_line_room: (c: { sale: string }): Refusal => ({
    code: 'ticket_required',
    message: `sale '${c.sale}' has a waiting room: its units are sold through admitted tickets, not carts`,
    options: { details: { sale: c.sale } },
  }),
  /** Redis Cluster: one script runs on one slot, so a cart's sales must share a hash tag. */
  cart_cross_slot: (c: { sales: string[] }): Refusal => ({
    code: 'invalid_input',
    message: `sales ${c.sales.map((s) => `'${s}'`).join(', ')} live on different Redis Cluster slots: sales sold in one cart need SKUs that start with the same {tag} (e.g. '{shop}tee', '{shop}mug')`,
    options: { field: 'lines', details: { sales: c.sales } },
  }),
} as const;

export type RefusalReason = keyof typeof RULES;
export type RefusalContext<R extends RefusalReason> = Parameters<(typeof RULES)[R]>[0];

/** Every reason id, for scripts' and SQL's answers to be checked against. */
export const REFUSAL_REASONS = Object.keys(RULES) as RefusalReason[];

export function isRefusalReason(value: unknown): value is RefusalReason {
  return typeof value === 'string' && Object.hasOwn(RULES, value);
}

/** The one way a step's refusal becomes an error: same code, message, field and details on every store. */
export function refusal<R extends RefusalReason>(reason: R, context: RefusalContext<R> & { line?: number }): DibsError {
  const { code, message, options } = (RULES[reason] as (c: RefusalContext<R>) => Refusal)(context);
  const error = new DibsError(code, message, options);
  return context.line === undefined ? error : atLine(error, context.line);
}

/**
 * A refusal of one line of a cart: a cart's step judges each line as its sale's own step would,
 * then names the line that failed (message, `field` under `lines.<n>`, `details.line`).
 */
export function atLine(error: DibsError, line: number): DibsError {
  return new DibsError(error.code, `cart line ${line}: ${error.message}`, {
    retriable: error.retriable,
    field: `lines.${line}${error.field ? `.${error.field}` : ''}`,
    details: { ...error.details, line },
  });
}

/**
 * A refusal a script or SQL step answered as text: its reason id and whatever context the caller
 * has (each reason takes the fields it names). An id not in the list is a bug of the step, not a
 * refusal: `internal`.
 */
export function scriptRefusal(reason: unknown, context: Record<string, unknown>): DibsError {
  if (!isRefusalReason(reason))
    return new DibsError('internal', `a store step answered an unknown refusal '${String(reason)}'`);
  return refusal(reason, context as never);
}
