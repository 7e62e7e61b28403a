/**
 * The reference model of pool steps: pure judgements over a store-neutral snapshot read inside the
 * step. Stores whose steps run in TypeScript (SQLite, Firestore, PostgreSQL's code lifecycle) read,
 * call these, and write what they decided; Lua and SQL steps are held to the same judgements by the
 * model-based tests (test/model/). Each throws the refusal the step answers with, or returns what
 * the step must do.
 */
import { refusal } from '../refusals.js';
import type { CodeStatus } from '../types.js';
import { assertCodeInWindow, assertInWindow, type ValidityWindow } from '../window.js';

/** The pool as a step sees it. */
export interface PoolRules extends ValidityWindow {
  name: string;
  perClaimantLimit: number;
  publicCodes: boolean;
  maxRedemptions: number | null;
  maxRedemptionsPerClaimant: number | null;
}

/** A single-use code as a step sees it. */
export interface CodeState extends ValidityWindow {
  code: string;
  status: CodeStatus;
  claimant: string | null;
  redeemedAt: string | null;
  order: string | null;
  /** The checkout hold, live or not (`until`: ISO UTC). */
  hold: { claimant: string; until: string } | null;
}

/**
 * The per-claimant limit, decided here and nowhere else in TypeScript: how many more codes a
 * claimant holding `held` codes (claimed or redeemed) may get. Scripts and SQL compare
 * `held >= limit` the same way (one line each).
 */
export function roomUnderLimit(limit: number, held: number): number {
  return Math.max(0, limit - held);
}

/** A claim that is not a replay: inside the pool's window; how many codes it may take (0: `already-held`). */
export function judgeClaim(pool: PoolRules, now: string, held: number, count: number): number {
  assertInWindow(pool.name, pool, now);
  return Math.min(count, roomUnderLimit(pool.perClaimantLimit, held));
}

/** A claim's idempotency key seen before must name the same claimant and count. */
export function judgeClaimKey(
  key: string,
  prior: { claimant: string; count: number },
  claimant: string,
  count: number,
): void {
  if (prior.claimant !== claimant || prior.count !== count)
    throw refusal('key_reused', { key, prior: { claimant: prior.claimant, count: prior.count } });
}

/** A lower perClaimantLimit may not go below what a claimant already holds. */
export function judgeLimitChange(requested: number, maxHeld: number): void {
  if (requested < maxHeld) throw refusal('limit_below_holdings', { requested, held: maxHeld });
}

export function holdIsLive(c: Pick<CodeState, 'hold'>, now: string): boolean {
  return c.hold !== null && c.hold.until > now;
}

/** The code must be held (claimed or redeemed) — by `claimant`, when one is named. */
export function judgeHeld(c: CodeState, claimant: string | null): void {
  if (c.status !== 'claimed' && c.status !== 'redeemed') throw refusal('not_held', { code: c.code, status: c.status });
  if (claimant !== null && c.claimant !== claimant) throw refusal('other_holder', { code: c.code, claimant });
}

export function judgeRelease(c: CodeState, claimant: string | null): void {
  if (c.status === 'redeemed') throw refusal('redeemed_not_releasable', { code: c.code });
  judgeHeld(c, claimant);
}

export function judgeRevoke(c: CodeState): void {
  if (c.status === 'revoked') throw refusal('already_revoked', { code: c.code });
}

export interface RedeemContext {
  claimant: string | null;
  orderId: string | null;
  now: string;
  /** Codes the would-be holder holds now (read lazily: only a direct redeem needs it). */
  heldBy(claimant: string): number;
  /** Redemptions of the pool in all and by the holder (read only when the pool limits them). */
  redeemed(holder: string): { pool: number; claimant: number };
}

export type RedeemJudgement = { kind: 'replay' } | { kind: 'redeem'; holder: string; direct: boolean };

/**
 * Redeem of a single-use code: a retry for the same order answers unchanged; a free code of a
 * public pool is redeemed directly by its claimant (who becomes its holder, within the limit);
 * otherwise the holder (or the named claimant) redeems — unless another checkout holds it, or a
 * window or redemption limit says no. The order of the checks is the order every store answers in.
 */
export function judgeRedeem(pool: PoolRules, c: CodeState, ctx: RedeemContext): RedeemJudgement {
  if (c.status === 'redeemed') {
    if (ctx.orderId !== null && c.order === ctx.orderId) return { kind: 'replay' };
    throw refusal('already_redeemed', { code: c.code, at: c.redeemedAt! });
  }
  const direct = c.status === 'free' && pool.publicCodes;
  if (direct) {
    if (ctx.claimant === null) throw refusal('claimant_required', { code: c.code });
    if (roomUnderLimit(pool.perClaimantLimit, ctx.heldBy(ctx.claimant)) === 0)
      throw refusal('holder_at_limit', { pool: pool.name, claimant: ctx.claimant, limit: pool.perClaimantLimit });
  } else {
    judgeHeld(c, ctx.claimant);
  }
  const holder = direct ? ctx.claimant! : c.claimant!;
  if (holdIsLive(c, ctx.now) && c.hold!.claimant !== holder)
    throw refusal('held', { code: c.code, until: c.hold!.until });
  assertInWindow(pool.name, pool, ctx.now);
  assertCodeInWindow(c.code, c, ctx.now);
  if (pool.maxRedemptions !== null || pool.maxRedemptionsPerClaimant !== null)
    judgeRedemptionRoom(pool, ctx.redeemed(holder), holder);
  return { kind: 'redeem', holder, direct };
}

/** A redeem beyond the pool's redemption limits: `limit_reached`, naming the limit. */
export function judgeRedemptionRoom(
  pool: Pick<PoolRules, 'name' | 'maxRedemptions' | 'maxRedemptionsPerClaimant'>,
  redeemed: { pool: number; claimant: number },
  claimant: string,
): void {
  if (pool.maxRedemptions !== null && redeemed.pool >= pool.maxRedemptions)
    throw refusal('redemptions_pool', { pool: pool.name, max: pool.maxRedemptions });
  if (pool.maxRedemptionsPerClaimant !== null && redeemed.claimant >= pool.maxRedemptionsPerClaimant)
    throw refusal('redemptions_claimant', { pool: pool.name, claimant, max: pool.maxRedemptionsPerClaimant });
}

/** Unredeem needs a redeemed code, and — when an order is named — the redemption of that order. */
export function judgeUnredeem(c: Pick<CodeState, 'code' | 'status' | 'order'>, orderId: string | null): void {
  if (c.status !== 'redeemed') throw refusal('not_redeemed', { code: c.code, status: c.status });
  if (orderId !== null && c.order !== orderId) throw refusal('other_order', { code: c.code, orderId });
}

/**
 * A checkout hold by `claimant`: the code must be redeemable by them now (theirs, or a free code of
 * a public pool with room under their limit), not held live by another checkout, inside both windows.
 */
export function judgeHold(
  pool: PoolRules,
  c: CodeState,
  claimant: string,
  now: string,
  heldBy: (claimant: string) => number,
): void {
  if (c.status === 'redeemed') throw refusal('already_redeemed', { code: c.code, at: c.redeemedAt! });
  if (c.status === 'revoked') throw refusal('revoked', { code: c.code });
  if (c.status === 'free') {
    if (!pool.publicCodes) throw refusal('not_held', { code: c.code, status: c.status });
    if (roomUnderLimit(pool.perClaimantLimit, heldBy(claimant)) === 0)
      throw refusal('holder_at_limit', { pool: pool.name, claimant, limit: pool.perClaimantLimit });
  } else {
    judgeHeld(c, claimant);
  }
  if (holdIsLive(c, now) && c.hold!.claimant !== claimant)
    throw refusal('held', { code: c.code, until: c.hold!.until });
  assertInWindow(pool.name, pool, now);
  assertCodeInWindow(c.code, c, now);
}

/** Dropping a hold: none live → nothing to do; another claimant's live hold → `held`. */
export function judgeReleaseHold(c: CodeState, claimant: string | null, now: string): 'none' | 'drop' {
  if (!holdIsLive(c, now)) return 'none';
  if (claimant !== null && c.hold!.claimant !== claimant) throw refusal('held', { code: c.code, until: c.hold!.until });
  return 'drop';
}

/** A multi-use code as a step sees it. */
export interface MultiUseState extends ValidityWindow {
  code: string;
  maxUses: number;
  perClaimant: number | null;
  uses: number;
}

/**
 * A use of a multi-use code, once per order: the same order again answers with its use (unless it
 * names another claimant); a new use needs both windows open, a use left, and — when uses are
 * limited per claimant — a named claimant with room.
 */
export function judgeUse(
  pool: PoolRules,
  m: MultiUseState,
  ctx: {
    claimant: string | null;
    orderId: string | null;
    now: string;
    prior: { claimant: string | null } | null;
    usesBy(claimant: string): number;
  },
): 'replay' | 'use' {
  if (ctx.orderId === null) throw refusal('order_required', { code: m.code });
  if (ctx.prior) {
    if (ctx.claimant !== null && ctx.prior.claimant !== ctx.claimant)
      throw refusal('order_of_other_claimant', { code: m.code, orderId: ctx.orderId });
    return 'replay';
  }
  assertInWindow(pool.name, pool, ctx.now);
  assertCodeInWindow(m.code, m, ctx.now);
  if (m.uses >= m.maxUses) throw refusal('uses_exhausted', { code: m.code, max: m.maxUses });
  if (m.perClaimant !== null) {
    if (ctx.claimant === null) throw refusal('claimant_required', { code: m.code });
    if (ctx.usesBy(ctx.claimant) >= m.perClaimant)
      throw refusal('uses_per_claimant', { code: m.code, claimant: ctx.claimant, max: m.perClaimant });
  }
  return 'use';
}

/** Giving back a multi-use code's use needs the order that used it. */
export function judgeUnuse<U>(code: string, orderId: string | null, use: U | null | undefined): U {
  if (orderId === null) throw refusal('order_required', { code });
  if (use === null || use === undefined) throw refusal('other_order', { code, orderId });
  return use;
}
