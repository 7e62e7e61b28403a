/**
 * `dibs.pools`: validates every input once (schemas.ts) and delegates to the store's PoolBackend,
 * so every store gets the same, already-clean arguments and callers get the same typed errors.
 */

import type { Readable } from 'node:stream';
import { z } from 'zod';
import { DibsError } from '../errors.js';
import { codesToCsv } from '../export.js';
import {
  codeShape,
  type GenerateInput,
  type GenerateProgress,
  type GenerateResult,
  generateInto,
  generateSpecSchema,
} from '../generate.js';
import { type CsvSource, type ImportOptions, importCodeList, importCsv } from '../import.js';
import { claimantSchema, codeSchema, listOptionsSchema, orderIdSchema, poolNameSchema } from '../schemas.js';
import type { ListOptions, OutboxEvent, Page, Violation } from '../types.js';
import { parseInput } from '../validate.js';
import { windowState } from '../window.js';
import type { PoolBackend } from './backend.js';
import { type CodeState, judgeRedeem, type PoolRules } from './rules.js';
import {
  type CodeWindowInput,
  type CreatePoolInput,
  claimCountSchema,
  claimOptionsSchema,
  codeStatusSchema,
  codeWindowSchema,
  createPoolSchema,
  holdTtlSchema,
  type MultiUseCodeInput,
  multiUseCodeSchema,
  type UpdatePoolInput,
  updatePoolSchema,
} from './schemas.js';
import type {
  ClaimManyResult,
  ClaimOptions,
  ClaimResult,
  CodeFormat,
  CodeInfo,
  CodeInvalidReason,
  CodeStatus,
  CodeValidation,
  ImportResult,
  Pool,
  PoolStats,
} from './types.js';

export class Pools {
  constructor(private readonly backend: PoolBackend) {}

  async create(input: CreatePoolInput): Promise<Pool> {
    const spec = parseInput(createPoolSchema, input);
    if (spec.codeFormat) checkFormat(spec.codeFormat);
    return this.backend.createPool(spec);
  }

  async get(name: string): Promise<Pool> {
    return this.backend.getPool(pool(name));
  }

  async list(options: ListOptions = {}): Promise<Page<Pool>> {
    return this.backend.listPools(parseInput(listOptionsSchema, options));
  }

  async update(name: string, patch: UpdatePoolInput): Promise<Pool> {
    const parsed = parseInput(updatePoolSchema, patch);
    if (parsed.codeFormat) checkFormat(parsed.codeFormat);
    return this.backend.updatePool(pool(name), parsed);
  }

  async delete(name: string): Promise<void> {
    return this.backend.deletePool(pool(name));
  }

  /**
   * Generates `count` new unique codes from a pattern or length (crypto randomness, optional check
   * character) and imports them; an infeasible request is refused before anything is written.
   */
  async generate(
    name: string,
    spec: GenerateInput,
    options: { onProgress?: (p: GenerateProgress) => void } = {},
  ): Promise<GenerateResult> {
    const target = pool(name);
    const existing = await this.backend.getPool(target); // not_found before any work
    const result = await generateInto((codes) => importCodeList(this.backend, target, codes), spec, options.onProgress);
    // the pool learns its codes' shape (the first generation decides), so validate can catch typos
    if (existing.codeFormat === null) {
      const { count: _count, ...format } = parseInput(generateSpecSchema, spec);
      await this.backend.updatePool(target, { codeFormat: format });
    }
    return result;
  }

  /** Adds codes from a list (array, generator, async iterable). Blank/oversized entries are counted as invalid. */
  async importCodes(
    name: string,
    codes: Iterable<unknown> | AsyncIterable<unknown>,
    options?: ImportOptions,
  ): Promise<ImportResult> {
    return importCodeList(this.backend, pool(name), codes, options);
  }

  /** Adds codes from CSV text or a byte stream (one code per line, or a `code` column). Streams; never buffers the file. */
  async importCsv(name: string, source: CsvSource, options?: ImportOptions): Promise<ImportResult> {
    return importCsv(this.backend, pool(name), source, options);
  }

  /** Gives one code to `claimant` — or, at its limit, answers `already-held` with a code it holds. */
  async claim(name: string, claimant: string, options: ClaimOptions = {}): Promise<ClaimResult> {
    const { idempotencyKey } = parseInput(claimOptionsSchema, options);
    const result = await this.backend.claim(pool(name), who(claimant), 1, idempotencyKey ?? null);
    const code = result.status === 'claimed' ? result.codes[0] : result.held[0];
    return {
      pool: result.pool,
      claimant: result.claimant,
      status: result.status,
      code: code!,
      held: result.held,
      replayed: result.replayed,
    };
  }

  /** Gives up to `count` codes, bounded by the claimant's remaining limit and by stock. */
  async claimMany(name: string, claimant: string, count: number, options: ClaimOptions = {}): Promise<ClaimManyResult> {
    const { idempotencyKey } = parseInput(claimOptionsSchema, options);
    return this.backend.claim(
      pool(name),
      who(claimant),
      parseInput(claimCountSchema, count, 'count'),
      idempotencyKey ?? null,
    );
  }

  async release(name: string, code: string, options: { claimant?: string } = {}): Promise<CodeInfo> {
    return this.backend.release(pool(name), codeArg(code), optionalClaimant(options.claimant));
  }

  /**
   * Marks a claimed code used — at checkout, for `orderId`: redeeming again for the same order
   * answers with the same redeemed code (a retried checkout), for another order `already_redeemed`.
   */
  async redeem(name: string, code: string, options: { claimant?: string; orderId?: string } = {}): Promise<CodeInfo> {
    return this.backend.redeem(
      pool(name),
      codeArg(code),
      optionalClaimant(options.claimant),
      optionalOrder(options.orderId),
    );
  }

  /** The refund path: a redeemed code goes back to its holder, recorded as a `code.unredeemed` event. */
  async unredeem(name: string, code: string, options: { orderId?: string } = {}): Promise<CodeInfo> {
    return this.backend.unredeem(pool(name), codeArg(code), optionalOrder(options.orderId));
  }

  /**
   * Whether `code` can be redeemed now (by `claimant`, when given; for a public code, by that
   * claimant directly) and why not — without changing anything. A checkout calls this before taking payment, then `redeem`s. Throws `not_found` for
   * an unknown pool; an unknown code is `{valid: false, reason: 'not_found'}`.
   */
  async validate(name: string, code: string, options: { claimant?: string } = {}): Promise<CodeValidation> {
    const claimant = optionalClaimant(options.claimant);
    const poolInfo = await this.backend.getPool(pool(name));
    if (poolInfo.codeFormat !== null && !codeShape({ ...poolInfo.codeFormat, count: 1 }).verify(codeArg(code)))
      return { valid: false, reason: 'malformed', code: null };
    let info: CodeInfo;
    try {
      info = await this.backend.getCode(pool(name), codeArg(code), claimant);
    } catch (error) {
      if (
        error instanceof DibsError &&
        error.code === 'not_found' &&
        error.details !== undefined &&
        'code' in error.details
      )
        return { valid: false, reason: 'not_found', code: null };
      throw error;
    }
    const windowed =
      poolInfo.startsAt !== null || poolInfo.expiresAt !== null || info.startsAt != null || info.expiresAt != null;
    // without a window only a hold needs the time, and the store reports a hold only while live
    const now = windowed ? await this.backend.clock() : '';
    const outside = windowed ? closedWindow(poolInfo, info, now) : null;
    if (info.uses !== undefined) {
      // a multi-use code: its window, then uses left in all and for this claimant
      if (outside !== null) return { valid: false, reason: outside, code: info };
      const mine = info.uses.byClaimant ?? 0;
      if (
        info.uses.remaining <= 0 ||
        (info.uses.perClaimant !== null && claimant !== null && mine >= info.uses.perClaimant)
      )
        return { valid: false, reason: 'limit_reached', code: info };
      return { valid: true, code: info };
    }
    return this.validateSingle(poolInfo, info, claimant, now);
  }

  /**
   * A single-use code: judged by the redeem's own rules (core/model/pools.ts), on what was just
   * read, so validate answers with the refusal the redeem would give, in the redeem's order.
   */
  private async validateSingle(
    poolInfo: Pool,
    info: CodeInfo,
    claimant: string | null,
    now: string,
  ): Promise<CodeValidation> {
    // the would-be holder's codes: the redeemer of a free public code, else the code's holder
    const redeemer = info.status === 'claimed' ? info.claimant : info.status === 'free' ? claimant : null;
    const held = redeemer === null ? [] : await this.backend.holdings(info.pool, redeemer);
    // a free public code judged without a claimant: "by anyone" (a name no claimant has), who holds nothing
    const asked = claimant === null && info.status === 'free' && poolInfo.publicCodes ? ANYONE : claimant;
    try {
      judgeRedeem(poolRules(poolInfo), codeState(info), {
        claimant: asked,
        orderId: null,
        now,
        heldBy: () => held.length,
        redeemed: () => ({
          pool: poolInfo.stats.redeemed,
          claimant: held.filter((h) => h.status === 'redeemed').length,
        }),
      });
      return { valid: true, code: info };
    } catch (error) {
      if (!(error instanceof DibsError)) throw error;
      return { valid: false, reason: validationReason(error, info), code: info };
    }
  }

  /**
   * Holds a code for `claimant` during checkout, for `ttlMs` (1 s … 24 h, by the store's clock): no
   * other claimant can redeem or hold it meanwhile (`held`), claims skip it, and it expires by
   * itself. Holding again renews. `redeem` by the holder consumes the hold.
   */
  async hold(name: string, code: string, claimant: string, ttlMs: number): Promise<CodeInfo> {
    return this.backend.hold(pool(name), codeArg(code), who(claimant), parseInput(holdTtlSchema, ttlMs, 'ttlMs'));
  }

  /** Ends a hold before it expires (a checkout abandoned); `claimant`, when given, must hold it. */
  async releaseHold(name: string, code: string, options: { claimant?: string } = {}): Promise<CodeInfo> {
    return this.backend.releaseHold(pool(name), codeArg(code), optionalClaimant(options.claimant));
  }

  /** A code's own validity window (combined with the pool's): outside it the code is neither handed out nor redeemed. */
  async setCodeWindow(name: string, code: string, window: CodeWindowInput): Promise<CodeInfo> {
    return this.backend.setCodeWindow(pool(name), codeArg(code), parseInput(codeWindowSchema, window));
  }

  /**
   * Adds a multi-use code (e.g. `WELCOME10` for the first 1,000 buyers): `uses` in all, at most
   * `usesPerClaimant` (default 1; null: no limit) per claimant, each use recorded once per order.
   */
  async addMultiUseCode(name: string, spec: MultiUseCodeInput): Promise<CodeInfo> {
    return this.backend.addMultiUseCode(pool(name), parseInput(multiUseCodeSchema, spec));
  }

  async revoke(name: string, code: string): Promise<CodeInfo> {
    return this.backend.revoke(pool(name), codeArg(code));
  }

  async code(name: string, code: string): Promise<CodeInfo> {
    return this.backend.getCode(pool(name), codeArg(code));
  }

  async holdings(name: string, claimant: string): Promise<CodeInfo[]> {
    return this.backend.holdings(pool(name), who(claimant));
  }

  async stats(name: string): Promise<PoolStats> {
    return this.backend.stats(pool(name));
  }

  /** Every code with its status and holder, in batches (errors surface when iteration starts). */
  async *exportCodes(
    name: string,
    options: { status?: CodeStatus; batchSize?: number } = {},
  ): AsyncIterable<CodeInfo[]> {
    const status = options.status === undefined ? undefined : parseInput(codeStatusSchema, options.status, 'status');
    const batchSize = parseInput(z.number().int().min(1).max(100_000), options.batchSize ?? 5000, 'batchSize');
    yield* this.backend.exportCodes(pool(name), { ...(status ? { status } : {}), batchSize });
  }

  /** The export as CSV (`code,status,claimant,claimed_at,redeemed_at,starts_at,expires_at`; imports back with the windows), streamed. Checks the pool exists first. */
  async exportCsv(name: string, options: { status?: CodeStatus; escapeFormulas?: boolean } = {}): Promise<Readable> {
    // Validate and check existence before the first byte, so errors are answers, not broken streams.
    const status = options.status === undefined ? undefined : parseInput(codeStatusSchema, options.status, 'status');
    await this.backend.getPool(pool(name));
    return codesToCsv(this.exportCodes(name, status ? { status } : {}), options);
  }

  /** Invariant violations of the pool (I1, I2, I4, I7); an empty list means the pool is clean. */
  async audit(name: string): Promise<Violation[]> {
    return this.backend.audit(pool(name));
  }

  async events(options: { after?: string; limit?: number; pool?: string } = {}): Promise<OutboxEvent[]> {
    const limit = parseInput(z.number().int().min(1).max(1000), options.limit ?? 100, 'limit');
    return this.backend.listEvents({
      limit,
      ...(options.after ? { after: options.after } : {}),
      ...(options.pool ? { pool: pool(options.pool) } : {}),
    });
  }
}

/** Who a free public code is judged for when validate names no claimant: no claimant has this name, so it holds nothing. */
const ANYONE = '';

const poolRules = (p: Pool): PoolRules => ({
  name: p.name,
  perClaimantLimit: p.perClaimantLimit,
  publicCodes: p.publicCodes,
  startsAt: p.startsAt,
  expiresAt: p.expiresAt,
  maxRedemptions: p.maxRedemptions,
  maxRedemptionsPerClaimant: p.maxRedemptionsPerClaimant,
});

/** A code as the store reported it; its hold is reported only while live (so it never needs the time to be judged live). */
const codeState = (c: CodeInfo): CodeState => ({
  code: c.code,
  status: c.status,
  claimant: c.claimant,
  redeemedAt: c.redeemedAt,
  order: c.orderId,
  hold: c.hold ? { claimant: c.hold.claimant, until: '9999-12-31T23:59:59.999Z' } : null,
  startsAt: c.startsAt ?? null,
  expiresAt: c.expiresAt ?? null,
});

/** The redeem's refusal as a validation reason. */
function validationReason(error: DibsError, info: CodeInfo): CodeInvalidReason {
  switch (error.code) {
    case 'already_redeemed':
    case 'held':
    case 'not_yet_valid':
    case 'expired':
    case 'limit_reached':
      return error.code;
    case 'conflict':
      if (error.field === 'claimant') return 'other_holder';
      return info.status === 'revoked' ? 'revoked' : 'not_claimed';
    default:
      throw error;
  }
}

/** Where `now` falls in the pool's window and then the code's own: null when both are open. */
function closedWindow(poolInfo: Pool, info: CodeInfo, now: string): 'not_yet_valid' | 'expired' | null {
  const p = windowState(poolInfo, now);
  if (p !== 'open') return p;
  const c = windowState({ startsAt: info.startsAt ?? null, expiresAt: info.expiresAt ?? null }, now);
  return c === 'open' ? null : c;
}

const pool = (name: string) => parseInput(poolNameSchema, name, 'pool');
const who = (claimant: string) => parseInput(claimantSchema, claimant, 'claimant');
const codeArg = (code: string) => parseInput(codeSchema, code, 'code');
const optionalClaimant = (claimant: string | undefined) => (claimant === undefined ? null : who(claimant));
/** A code format must describe codes generate could make: the same rules (placeholders, charset). */
const checkFormat = (format: CodeFormat) => codeShape({ ...format, count: 1 });
const optionalOrder = (orderId: string | undefined) =>
  orderId === undefined ? null : parseInput(orderIdSchema, orderId, 'orderId');
