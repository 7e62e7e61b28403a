import type {
  ClaimManyResult,
  CodeInfo,
  CodeStatus,
  CodeWindow,
  ImportedCode,
  InsertResult,
  MultiUseCodeSpec,
  Pool,
  PoolPatch,
  PoolSpec,
  PoolStats,
} from './types.js';
import type { ListOptions, OutboxEvent, Page, Violation } from '../types.js';

/**
 * The store side of coupon pools, which every store implements. It never exposes connections or
 * transactions: each adapter owns its connections.
 *
 * Inputs are already validated by the `Dibs` facade (names, claimants, codes, limits are
 * well-formed), so backends enforce only what needs the stored state: existence, limits,
 * stock, idempotency — and each of those inside ONE atomic step (statement, transaction
 * or script). Failures are thrown as `DibsError` with a stable code.
 *
 * The conformance suite in `test/conformance/` is the executable form of this contract.
 */
export interface PoolBackend {
  /** Throws `already_exists` if a pool with that name exists. */
  createPool(spec: PoolSpec): Promise<Pool>;
  /** Throws `not_found`. */
  getPool(name: string): Promise<Pool>;
  /** Pools ordered by name; `after` is the name of the last pool of the previous page. */
  listPools(options: Required<Pick<ListOptions, 'limit'>> & ListOptions): Promise<Page<Pool>>;
  /** Throws `not_found`. Lowering the limit never takes codes away from anyone. */
  updatePool(name: string, patch: PoolPatch): Promise<Pool>;
  /** Removes the pool, its codes, claims, idempotency records and outbox events. Throws `not_found`. */
  deletePool(name: string): Promise<void>;
  /**
   * Finishes deletions whose deleter died half-way (stores that delete a pool in more than one
   * transaction: Firestore). At most `budget.deletions` of them and `budget.batches` batch
   * transactions per call; a deletion still in progress (its deleter alive) is left alone. The
   * service runs it as the `pools.finish-deletions` job. Stores that delete a pool in one
   * transaction have nothing to finish and do not implement it.
   */
  finishDeletions?(budget: { deletions: number; batches: number }): Promise<{ finished: number; paused: number }>;

  /**
   * Adds one batch of already-validated codes (≤ a few thousand) atomically, each with its own
   * validity window when it has one. Codes
   * already in the pool — or repeated inside the batch — are counted as duplicates, never inserted
   * twice, and keep their window (the first occurrence wins). Counters (total, free) move in the
   * same atomic step. Throws `not_found`.
   */
  insertCodes(pool: string, codes: readonly ImportedCode[]): Promise<InsertResult>;
  /**
   * How many `insertCodes` batches of one import may run at once (default 1). Batches may then
   * commit out of order, so a code's position in the export follows its batch's commit.
   */
  readonly importConcurrency?: number;
  /**
   * Called once an import has stored all its batches, with how many codes it inserted (> 0).
   * PostgreSQL refreshes the planner's statistics of a table that grew a lot, at once instead of
   * at autovacuum's next round (see postgres/import-codes.ts).
   */
  importFinished?(pool: string, inserted: number): Promise<void>;

  /**
   * Gives `count` (≥1) new codes to `claimant`, bounded by what the claimant's limit still allows.
   * In one atomic step:
   * - idempotency: if `idempotencyKey` was used before in this pool, return the original codes
   *   (`replayed: true`) when they are still held; a key used by another claimant or for another
   *   count throws `conflict`; a key whose codes were all released or revoked is forgotten.
   * - limit: a claimant already holding `perClaimantLimit` codes (claimed or redeemed) gets
   *   `status: 'already-held'` and its codes in `held`; `codes` is empty.
   * - stock: no free code → `sold_out`; fewer free codes than wanted → the ones there are.
   * - counters and the low-stock outbox event (once per crossing of the threshold).
   */
  claim(pool: string, claimant: string, count: number, idempotencyKey: string | null): Promise<ClaimManyResult>;

  /** Puts a claimed (not redeemed) code back into the pool. `claimant`, when given, must be the holder. */
  release(pool: string, code: string, claimant: string | null): Promise<CodeInfo>;
  /**
   * Marks a claimed code used, for `orderId` when given. Redeeming again for the same order answers
   * with the redeemed code unchanged (a checkout retry); otherwise a redeemed code throws
   * `already_redeemed`. Throws `conflict` (free/revoked or other holder), `not_found`, `held`
   * (another claimant's live hold), `not_yet_valid`/`expired` (pool or code window).
   * A multi-use code records one use per `orderId` (required): see `addMultiUseCode`.
   */
  redeem(pool: string, code: string, claimant: string | null, orderId: string | null): Promise<CodeInfo>;
  /**
   * The refund path: a redeemed code goes back to `claimed` by its holder, and a `code.unredeemed`
   * outbox event records it. `orderId`, when given, must be the order it was redeemed for.
   * Throws `conflict` (not redeemed, other order), `not_found`. For a multi-use code `orderId`
   * is required and that order's use is given back.
   */
  unredeem(pool: string, code: string, orderId: string | null): Promise<CodeInfo>;
  /** The store's clock now (ISO 8601 UTC): the time every window and expiry is judged by. */
  clock(): Promise<string>;
  /** Withdraws a code for good; its holder (if any) loses it. Throws `conflict` if already revoked. */
  revoke(pool: string, code: string): Promise<CodeInfo>;
  /**
   * Throws `not_found` for an unknown pool or code. A hold is reported only while live (store
   * clock); for a multi-use code `uses` counts its uses (and, with `claimant`, theirs).
   */
  getCode(pool: string, code: string, claimant?: string | null): Promise<CodeInfo>;

  /**
   * Holds a single-use code for `claimant` for `ttlMs` (by the store's clock) during checkout: in
   * the same atomic step it checks the code could be redeemed by `claimant` now (claimed by them,
   * or a free code of a public pool; inside the pool's and the code's windows), and refuses with
   * `held` while another claimant's hold is live. Holding again by the same claimant renews it.
   * A held free code is not handed out by claims. Redeem by the holder consumes the hold; an
   * expired hold is ignored by every step (lazily). Multi-use codes cannot be held (`conflict`).
   */
  hold(pool: string, code: string, claimant: string, ttlMs: number): Promise<CodeInfo>;
  /** Drops a live hold (`claimant`, when given, must be its holder: else `held`); no hold: the code unchanged. */
  releaseHold(pool: string, code: string, claimant: string | null): Promise<CodeInfo>;
  /** Sets a code's own validity window (single- or multi-use); claims skip a code outside it, redeems refuse it. */
  setCodeWindow(pool: string, code: string, window: CodeWindow): Promise<CodeInfo>;
  /**
   * Adds a multi-use code: redeemable `uses` times in all (at most `usesPerClaimant` by one
   * claimant), each use once per order — a redeem for an order already recorded answers with that
   * use; unredeem of an order gives its use back (a `code.unredeemed` event). `already_exists` when
   * the pool has that code (single- or multi-use).
   */
  addMultiUseCode(pool: string, spec: MultiUseCodeSpec): Promise<CodeInfo>;
  /** Codes the claimant holds (claimed or redeemed), oldest first. */
  holdings(pool: string, claimant: string): Promise<CodeInfo[]>;

  /** Exact counters, read in O(1) (maintained in the claim's atomic step, never COUNT(*)). */
  stats(pool: string): Promise<PoolStats>;
  /** Every code of the pool in a stable order, in batches of about `batchSize`. */
  exportCodes(pool: string, options: { status?: CodeStatus; batchSize: number }): AsyncIterable<CodeInfo[]>;
  /** Reads the raw state and reports every broken invariant (I1, I2, I4, I7); empty when clean. */
  audit(pool: string): Promise<Violation[]>;

  /** Outbox events in the order they were recorded. `after` is an event id. */
  listEvents(options: { after?: string; limit: number; pool?: string }): Promise<OutboxEvent[]>;
}
