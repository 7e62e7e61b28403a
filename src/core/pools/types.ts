/** Domain types of coupon pools: pools, codes, claims, imports. */

export type CodeStatus = 'free' | 'claimed' | 'redeemed' | 'revoked';

export interface PoolStats {
  /** Every code ever imported into the pool and not deleted: free + claimed + redeemed + revoked. */
  total: number;
  /** Codes that can still be handed out. */
  free: number;
  /** Codes held by a claimant and not yet used. */
  claimed: number;
  /** Codes held by a claimant and marked used. */
  redeemed: number;
  /** Codes withdrawn by an operator; never handed out again. */
  revoked: number;
}

/** What a pool's owner decides about it: set at creation, changed by `update` (a `PoolPatch`). */
export interface PoolSettings {
  /** How many codes one claimant may hold at once (claimed or redeemed). */
  perClaimantLimit: number;
  /** Below this many free codes a `pool.low_stock` event is recorded (once per crossing); null: never. */
  lowStockThreshold: number | null;
  metadata: Record<string, unknown>;
  /**
   * Validity window (ISO 8601, normalised to UTC): codes are handed out and redeemed only from
   * `startsAt` (inclusive) until `expiresAt` (exclusive), by the store's clock.
   */
  startsAt: string | null;
  expiresAt: string | null;
  /** At most this many codes redeemed in all / by one claimant (null: no limit); beyond: `limit_reached`. */
  maxRedemptions: number | null;
  maxRedemptionsPerClaimant: number | null;
  /**
   * Public codes (printed on receipts, shared in a newsletter): a code never claimed may be
   * redeemed directly by a claimant, who becomes its holder.
   */
  publicCodes: boolean;
  /** The shape of the pool's codes (set by `generate`): `validate` refuses a mistyped code before any lookup. */
  codeFormat: CodeFormat | null;
}

/** A pool to create: its name and settings. */
export interface PoolSpec extends PoolSettings {
  name: string;
}

/** A pool as stored: its spec, when it was created, and its counters. */
export interface Pool extends PoolSpec {
  createdAt: string;
  stats: PoolStats;
}

/** A change of settings: a field left out keeps its value (merged by `mergePoolSettings`, rules.ts). */
export type PoolPatch = Partial<PoolSettings>;

/** A generated code's shape: pattern or length, charset, prefix/suffix, check character. */
export interface CodeFormat {
  length?: number;
  pattern?: string;
  charset: string;
  prefix: string;
  suffix: string;
  checkChar: boolean;
}

export interface CodeInfo {
  pool: string;
  code: string;
  status: CodeStatus;
  claimant: string | null;
  claimedAt: string | null;
  redeemedAt: string | null;
  /** The order a redeemed code was redeemed for (checkout), when one was named. */
  orderId: string | null;
  /** The code's own validity window (combined with the pool's), when it has one. */
  startsAt?: string | null;
  expiresAt?: string | null;
  /** A live checkout hold (`pools.hold`): only `claimant` may redeem the code until `expiresAt`. */
  hold?: CodeHold | null;
  /** A multi-use code (one code, N uses): its uses. For `redeem`, the answer describes this use. */
  uses?: CodeUses;
}

export interface CodeHold {
  claimant: string;
  expiresAt: string;
}

export interface CodeUses {
  /** Uses allowed in all. */
  max: number;
  /** Uses recorded (each one order, counted once). */
  used: number;
  remaining: number;
  /** Uses allowed per claimant (null: no limit). */
  perClaimant: number | null;
  /** Uses by the claimant asked about (`getCode(pool, code, claimant)`), when one was named. */
  byClaimant?: number;
}

/** A multi-use code (e.g. `WELCOME10` for the first 1,000 buyers). */
export interface MultiUseCodeSpec {
  code: string;
  /** How many times the code can be redeemed in all. */
  uses: number;
  /** How many times one claimant may redeem it (null: no limit; then a claimant is optional). */
  usesPerClaimant: number | null;
  startsAt: string | null;
  expiresAt: string | null;
}

/** A code's own validity window (ISO 8601 UTC; null = open on that side). */
export interface CodeWindow {
  startsAt: string | null;
  expiresAt: string | null;
}

/** Why a code cannot be redeemed now (`Dibs.pools.validate`). */
export type CodeInvalidReason =
  | 'not_found'
  | 'not_claimed'
  | 'other_holder'
  | 'already_redeemed'
  | 'revoked'
  | 'not_yet_valid'
  | 'expired'
  | 'limit_reached'
  | 'malformed'
  | 'held';

export type CodeValidation =
  | { valid: true; code: CodeInfo }
  | { valid: false; reason: CodeInvalidReason; code: CodeInfo | null };

export type ClaimStatus = 'claimed' | 'already-held';

export interface ClaimResult {
  pool: string;
  claimant: string;
  /** `claimed`: a new code was taken by this call (or by the original call of a replayed idempotency key).
   *  `already-held`: the claimant is at its limit; `code` is one it already holds. */
  status: ClaimStatus;
  code: string;
  /** Every code the claimant holds in this pool after the call (claimed or redeemed). */
  held: string[];
  /** True when this answer is the stored answer of an earlier call with the same idempotency key. */
  replayed: boolean;
}

export interface ClaimManyResult {
  pool: string;
  claimant: string;
  status: ClaimStatus;
  /** The codes taken by this call (or by the original call of a replayed key). Empty when `already-held`. */
  codes: string[];
  held: string[];
  replayed: boolean;
}

export interface ClaimOptions {
  idempotencyKey?: string;
}

export interface ImportResult {
  /** Codes added to the pool. */
  imported: number;
  /** Codes already in the pool or repeated within the input (their windows are not changed). */
  duplicates: number;
  /** Blank, oversized or malformed entries (bad code or bad window) that were skipped. */
  invalid: number;
  /** The first skipped entry and why, when `invalid` > 0: where to look in a file of millions of rows. */
  firstInvalid?: InvalidEntry;
}

/** Where an import entry was and why it was skipped. */
export interface InvalidEntry {
  /** CSV: the line of the file (1-based; the header is line 1). */
  line?: number;
  /** A list: the element's index (0-based). */
  index?: number;
  /** The column (CSV, as its header names it) or field (list) that was wrong. */
  field: string;
  message: string;
}

/** A code to import with its own validity window (see `CodeWindow`). */
export interface WindowedCode extends CodeWindow {
  code: string;
}

/** One entry of an import batch: a bare code, or a code with its own window. */
export type ImportedCode = string | WindowedCode;

export interface InsertResult {
  inserted: number;
  duplicates: number;
}

export interface ImportProgress extends ImportResult {
  /** Bytes of input consumed so far, when the input is a byte stream. */
  bytes?: number;
}
