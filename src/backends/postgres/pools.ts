/**
 * PostgreSQL coupon pools: every operation except claims (claim.ts) and the COPY import
 * (import-codes.ts). Each operation is one statement or one transaction; multi-step ones follow
 * the lock order of pools.sql (code rows → counter shard → pool row).
 */
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { PoolBackend } from '../../core/backend.js';
import { DibsError, notFound } from '../../core/errors.js';
import type {
  CodeFormat,
  ClaimManyResult,
  CodeInfo,
  CodeStatus,
  InsertResult,
  OutboxEvent,
  Page,
  Pool,
  PoolPatch,
  PoolSpec,
  PoolStats,
  Violation,
} from '../../core/types.js';
import { unredeemedEvent } from '../../core/events.js';
import { alreadyRedeemed, assertRedeemedFor, assertRedemptionRoom, claimantRequired, holderAtLimit } from '../shared/pool-rules.js';
import { assertInWindow } from '../../core/window.js';
import { loadQueries } from '../shared/sql-files.js';
import { PgClaims } from './claim.js';
import { causeState, query, translate, withTransaction, type PgOptions } from './connection.js';
import { IMPORT_CONCURRENCY, insertCodes } from './import-codes.js';
import { settleLowStock } from './low-stock.js';

const Q = loadQueries(new URL('./pools.sql', import.meta.url), [
  'poolByName', 'listPools', 'insertPool', 'lockPoolRow', 'maxHeldByOneClaimant', 'updatePool', 'deleteKeys', 'deletePool', 'deleteEvents',
  'moveCounters', 'codeForUpdate', 'codeByValue', 'setCodeState', 'heldCodes', 'exportAll', 'exportByStatus',
  'countByStatus', 'claimantsOverLimit', 'holderMismatch', 'keysWithForeignCodes', 'lowStockState', 'lowStockEventCount',
  'eventsAfter', 'poolEventsAfter', 'insertEvent', 'codeByName', 'poolIdByName', 'now', 'redeemedCounts', 'freeSlot', 'redeemDirect',
]);

/** Counter rows per pool: claims spread their counter updates over these so no row is hot (16 made
 * two of 16 concurrent claims collide on a shard about half the time; 64 keeps collisions rare). */
export const COUNTER_SHARDS = 64;

interface PoolRow {
  id: string;
  name: string;
  per_claimant_limit: number;
  low_stock_threshold: number | null;
  metadata: Record<string, unknown>;
  starts_at: Date | null;
  expires_at: Date | null;
  max_redemptions: number | null;
  max_redemptions_per_claimant: number | null;
  public_codes: boolean;
  code_format: CodeFormat | null;
  created_at: Date;
  total: string;
  free: string;
  claimed: string;
  redeemed: string;
  revoked: string;
}

interface CodeRow {
  id: string;
  code: string;
  status: CodeStatus;
  claimant: string | null;
  claimed_at: Date | null;
  redeemed_at: Date | null;
  redeemed_order: string | null;
}

/** A code's next state, its counter move, and an outbox event to record with it (given the transaction's time). */
type Decision = { status: CodeStatus; keepHolder: boolean; order: string | null; move: Move; direct?: { claimant: string; slot: number }; event?: (at: string) => { type: string; idempotencyKey: string; payload: unknown } };

/** What a code transition reads of its pool: id, threshold, window and the transaction's now(). */
interface PoolWindowRow {
  id: string;
  per_claimant_limit: number;
  low_stock_threshold: number | null;
  starts_at: Date | null;
  expires_at: Date | null;
  max_redemptions: number | null;
  max_redemptions_per_claimant: number | null;
  public_codes: boolean;
  now: Date;
}

type Move = Partial<Record<'free' | 'claimed' | 'redeemed' | 'revoked', number>>;

export class PgPools implements PoolBackend {
  private readonly claims: PgClaims;
  readonly importConcurrency: number;

  constructor(
    private readonly pool: pg.Pool,
    options: PgOptions,
  ) {
    this.claims = new PgClaims(pool, options);
    // leave a connection for claims while an import runs
    this.importConcurrency = Math.max(1, Math.min(IMPORT_CONCURRENCY, options.poolSize - 1));
  }

  async createPool(spec: PoolSpec): Promise<Pool> {
    const { rowCount } = await query(this.pool, Q.insertPool, [spec.name, spec.perClaimantLimit, spec.lowStockThreshold, JSON.stringify(spec.metadata), COUNTER_SHARDS, spec.startsAt, spec.expiresAt, spec.maxRedemptions, spec.maxRedemptionsPerClaimant, spec.publicCodes, spec.codeFormat === null ? null : JSON.stringify(spec.codeFormat)]);
    if (!rowCount) throw new DibsError('already_exists', `pool '${spec.name}' already exists`, { field: 'name' });
    this.claims.thresholdChanged(spec.name, spec.lowStockThreshold);
    return this.getPool(spec.name);
  }

  async getPool(name: string): Promise<Pool> {
    return toPool(await this.poolRow(this.pool, name));
  }

  async listPools({ limit, after }: { limit: number; after?: string }): Promise<Page<Pool>> {
    const { rows } = await query<PoolRow>(this.pool, Q.listPools, [after ?? '', limit + 1]);
    const items = rows.slice(0, limit).map(toPool);
    return { items, nextCursor: rows.length > limit ? items[items.length - 1]!.name : null };
  }

  async updatePool(name: string, patch: PoolPatch): Promise<Pool> {
    const threshold = await withTransaction(this.pool, async (client) => {
      const row = await this.poolRow(client, name);
      await client.query(Q.lockPoolRow, [row.id]);
      const limit = patch.perClaimantLimit ?? row.per_claimant_limit;
      if (limit < row.per_claimant_limit) {
        const { n } = (await client.query<{ n: number }>(Q.maxHeldByOneClaimant, [row.id])).rows[0]!;
        if (n > limit) {
          throw new DibsError('conflict', `perClaimantLimit cannot go below ${n}: a claimant already holds ${n} codes`, { field: 'perClaimantLimit', details: { maxHeld: n } });
        }
      }
      const threshold = patch.lowStockThreshold === undefined ? row.low_stock_threshold : patch.lowStockThreshold;
      const metadata = patch.metadata === undefined ? row.metadata : patch.metadata;
      const startsAt = patch.startsAt === undefined ? row.starts_at : patch.startsAt;
      const expiresAt = patch.expiresAt === undefined ? row.expires_at : patch.expiresAt;
      const maxRedemptions = patch.maxRedemptions === undefined ? row.max_redemptions : patch.maxRedemptions;
      const maxPerClaimant = patch.maxRedemptionsPerClaimant === undefined ? row.max_redemptions_per_claimant : patch.maxRedemptionsPerClaimant;
      const publicCodes = patch.publicCodes ?? row.public_codes;
      const format = patch.codeFormat === undefined ? row.code_format : patch.codeFormat;
      await client.query(Q.updatePool, [row.id, limit, threshold, JSON.stringify(metadata), startsAt, expiresAt, maxRedemptions, maxPerClaimant, publicCodes, format === null ? null : JSON.stringify(format)]);
      return threshold;
    });
    this.claims.thresholdChanged(name, threshold);
    return this.getPool(name);
  }

  async deletePool(name: string): Promise<void> {
    await withTransaction(this.pool, async (client) => {
      const row = await this.poolRow(client, name);
      await client.query(Q.deleteKeys, [row.id]);
      await client.query(Q.deletePool, [row.id]);
      await client.query(Q.deleteEvents, [name]);
    });
  }

  async insertCodes(pool: string, codes: readonly string[]): Promise<InsertResult> {
    return insertCodes(this.pool, pool, codes);
  }

  async claim(pool: string, claimant: string, count: number, idempotencyKey: string | null): Promise<ClaimManyResult> {
    return this.claims.claim({ pool, claimant, count, key: idempotencyKey });
  }

  async release(pool: string, code: string, claimant: string | null): Promise<CodeInfo> {
    return this.transition(pool, code, (c) => {
      if (c.status === 'redeemed') throw new DibsError('conflict', `code '${code}' is redeemed and cannot be released`, { field: 'code' });
      assertHeld(c, claimant);
      return { status: 'free', keepHolder: false, order: null, move: { claimed: -1, free: 1 } };
    });
  }

  async redeem(pool: string, code: string, claimant: string | null, orderId: string | null): Promise<CodeInfo> {
    // A direct redeem of a public code races a claim of the same claimant for a slot (23505):
    // the next attempt sees that claim.
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.redeemOnce(pool, code, claimant, orderId);
      } catch (error) {
        if (causeState(error) !== '23505' || attempt >= 3) throw translate(error);
      }
    }
  }

  private redeemOnce(pool: string, code: string, claimant: string | null, orderId: string | null): Promise<CodeInfo> {
    return this.transition(pool, code, async (c, p, client) => {
      if (c.status === 'redeemed') {
        if (orderId !== null && c.redeemed_order === orderId) return null; // the same checkout again: its answer
        throw alreadyRedeemed(code, iso(c.redeemed_at)!);
      }
      // a never-claimed code of a public pool: its redeemer becomes its holder, within their limit
      const direct = c.status === 'free' && p.public_codes;
      if (!direct) assertHeld(c, claimant);
      else if (claimant === null) throw claimantRequired(code);
      const holder = direct ? claimant! : c.claimant!;
      assertInWindow(pool, { startsAt: iso(p.starts_at), expiresAt: iso(p.expires_at) }, iso(p.now)!);
      const limits = { maxRedemptions: p.max_redemptions, maxRedemptionsPerClaimant: p.max_redemptions_per_claimant };
      // limited pools and direct redeems count under the pool row lock, one redeem after the other
      if (direct || limits.maxRedemptions !== null || limits.maxRedemptionsPerClaimant !== null) await client.query(Q.lockPoolRow, [p.id]);
      if (limits.maxRedemptions !== null || limits.maxRedemptionsPerClaimant !== null) {
        const counts = (await client.query<{ pool: number; claimant: number }>(Q.redeemedCounts, [p.id, holder])).rows[0]!;
        assertRedemptionRoom(pool, limits, counts, holder);
      }
      if (!direct) return { status: 'redeemed', keepHolder: true, order: orderId, move: { claimed: -1, redeemed: 1 } };
      const slot = (await client.query<{ slot: number }>(Q.freeSlot, [p.id, holder, p.per_claimant_limit])).rows[0]?.slot;
      if (slot === undefined) throw holderAtLimit(pool, holder, p.per_claimant_limit);
      return { status: 'redeemed', keepHolder: true, order: orderId, move: { free: -1, redeemed: 1 }, direct: { claimant: holder, slot } };
    });
  }

  async unredeem(pool: string, code: string, orderId: string | null): Promise<CodeInfo> {
    return this.transition(pool, code, (c) => {
      assertRedeemedFor(c, orderId);
      return { status: 'claimed', keepHolder: true, order: null, move: { redeemed: -1, claimed: 1 }, event: (at) => unredeemedEvent(pool, c.code, c.claimant!, c.redeemed_order, iso(c.redeemed_at)!, at, randomUUID()) };
    });
  }

  async revoke(pool: string, code: string): Promise<CodeInfo> {
    return this.transition(pool, code, (c) => {
      if (c.status === 'revoked') throw new DibsError('conflict', `code '${code}' is already revoked`, { field: 'code' });
      return { status: 'revoked', keepHolder: false, order: null, move: { [c.status]: -1, revoked: 1 } };
    });
  }

  async clock(): Promise<string> {
    return (await query<{ now: Date }>(this.pool, Q.now)).rows[0]!.now.toISOString();
  }

  async getCode(pool: string, code: string): Promise<CodeInfo> {
    const c = (await query<CodeRow & { pool_id: string }>(this.pool, Q.codeByName, [pool, code])).rows[0];
    if (!c) throw notFound('pool', pool);
    if (c.id === null) throw notFound('code', code);
    return toCode(pool, c);
  }

  async holdings(pool: string, claimant: string): Promise<CodeInfo[]> {
    const row = await this.poolRow(this.pool, pool);
    return (await query<CodeRow>(this.pool, Q.heldCodes, [row.id, claimant])).rows.map((c) => toCode(pool, c));
  }

  async stats(pool: string): Promise<PoolStats> {
    return toStats(await this.poolRow(this.pool, pool));
  }

  async *exportCodes(pool: string, { status, batchSize }: { status?: CodeStatus; batchSize: number }): AsyncIterable<CodeInfo[]> {
    const { id } = await this.poolRow(this.pool, pool);
    let after = '0';
    for (;;) {
      const { rows } = status
        ? await query<CodeRow>(this.pool, Q.exportByStatus, [id, after, batchSize, status])
        : await query<CodeRow>(this.pool, Q.exportAll, [id, after, batchSize]);
      if (rows.length === 0) return;
      after = rows[rows.length - 1]!.id;
      yield rows.map((r) => toCode(pool, r));
    }
  }

  async audit(pool: string): Promise<Violation[]> {
    // One REPEATABLE READ snapshot: counters and rows are compared at the same instant.
    return withTransaction(this.pool, async (client) => {
      const row = await this.poolRow(client, pool);
      const violations: Violation[] = [];
      for (const c of (await client.query<CodeRow>(Q.holderMismatch, [row.id])).rows) {
        violations.push({ invariant: 'I1', pool, code: c.code, message: `code '${c.code}' is ${c.status} but its holder is ${c.claimant === null ? 'missing' : `'${c.claimant}'`}` });
      }
      for (const k of (await client.query<{ key: string; claimant: string; code: string; holder: string | null }>(Q.keysWithForeignCodes, [row.id])).rows) {
        violations.push({ invariant: 'I2', pool, code: k.code, claimant: k.claimant, message: `idempotency key '${k.key}' of '${k.claimant}' points at code '${k.code}' held by ${k.holder === null ? 'nobody' : `'${k.holder}'`}` });
      }
      for (const c of (await client.query<{ claimant: string; n: number }>(Q.claimantsOverLimit, [row.id, row.per_claimant_limit])).rows) {
        violations.push({ invariant: 'I2', pool, claimant: c.claimant, expected: row.per_claimant_limit, actual: c.n, message: `claimant '${c.claimant}' holds ${c.n} codes, limit is ${row.per_claimant_limit}` });
      }
      const ledger: PoolStats = { total: 0, free: 0, claimed: 0, redeemed: 0, revoked: 0 };
      for (const { status, n } of (await client.query<{ status: CodeStatus; n: string }>(Q.countByStatus, [row.id])).rows) {
        ledger[status] = Number(n);
        ledger.total += Number(n);
      }
      const counters = toStats(row);
      for (const k of Object.keys(ledger) as (keyof PoolStats)[]) {
        if (counters[k] !== ledger[k]) violations.push({ invariant: 'I4', pool, expected: ledger[k], actual: counters[k], message: `counter '${k}' says ${counters[k]} but the codes say ${ledger[k]}` });
      }
      const { low_stock_events: crossings } = (await client.query<{ low_stock_events: number }>(Q.lowStockState, [row.id])).rows[0]!;
      const { n: events } = (await client.query<{ n: number }>(Q.lowStockEventCount, [pool])).rows[0]!;
      if (events !== crossings) {
        violations.push({ invariant: 'I7', pool, expected: crossings, actual: events, message: `${crossings} low-stock crossings were recorded but the outbox holds ${events} low-stock events` });
      }
      return violations;
    }, 'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY');
  }

  async listEvents({ after, limit, pool }: { after?: string; limit: number; pool?: string }): Promise<OutboxEvent[]> {
    const from = after ?? '0';
    if (!/^\d{1,18}$/.test(from)) throw new DibsError('invalid_input', `after: '${after}' is not an event id`, { field: 'after' });
    const { rows } = pool
      ? await query<{ id: string; type: string; idempotency_key: string; payload: Record<string, unknown>; created_at: Date }>(this.pool, Q.poolEventsAfter, [from, limit, pool])
      : await query<{ id: string; type: string; idempotency_key: string; payload: Record<string, unknown>; created_at: Date }>(this.pool, Q.eventsAfter, [from, limit]);
    return rows.map((e) => ({ id: e.id, type: e.type, idempotencyKey: e.idempotency_key, payload: e.payload, createdAt: e.created_at.toISOString() }));
  }

  // --- helpers ---

  private async poolRow(client: pg.Pool | pg.ClientBase, name: string): Promise<PoolRow> {
    const row = (client === this.pool ? await query<PoolRow>(this.pool, Q.poolByName, [name]) : await client.query<PoolRow>(Q.poolByName, [name])).rows[0];
    if (!row) throw notFound('pool', name);
    return row;
  }

  /**
   * Locks the code, lets `decide` choose its next state, writes it, moves a counter shard, settles
   * low stock — one transaction. `decide` answers null to leave the code as it is (and answer with
   * it); it may run its own checks on the transaction's client first (redemption limits).
   */
  private async transition(
    pool: string,
    code: string,
    decide: (c: CodeRow, pool: PoolWindowRow, client: pg.ClientBase) => Decision | null | Promise<Decision | null>,
  ): Promise<CodeInfo> {
    return withTransaction(this.pool, async (client) => {
      const row = (await client.query<PoolWindowRow>(Q.poolIdByName, [pool])).rows[0];
      if (!row) throw notFound('pool', pool);
      const c = (await client.query<CodeRow>(Q.codeForUpdate, [row.id, code])).rows[0];
      if (!c) throw notFound('code', code);
      const decided = await decide(c, row, client);
      if (decided === null) return toCode(pool, c);
      const { status, keepHolder, order, move, event } = decided;
      if (event) {
        const e = event(iso(row.now)!);
        await client.query(Q.insertEvent, [e.type, e.idempotencyKey, pool, JSON.stringify(e.payload)]);
      }
      const next = decided.direct
        ? (await client.query<CodeRow>(Q.redeemDirect, [c.id, decided.direct.claimant, decided.direct.slot, order])).rows[0]!
        : (await client.query<CodeRow>(Q.setCodeState, [c.id, status, keepHolder, order])).rows[0]!;
      await client.query(Q.moveCounters, [row.id, Math.random(), 0, move.free ?? 0, move.claimed ?? 0, move.redeemed ?? 0, move.revoked ?? 0]);
      if (row.low_stock_threshold !== null && move.free) await settleLowStock(client, row.id, move.free < 0);
      return toCode(pool, next);
    });
  }
}

function assertHeld(c: CodeRow, claimant: string | null): void {
  if (c.status !== 'claimed' && c.status !== 'redeemed') throw new DibsError('conflict', `code '${c.code}' is ${c.status}, not held by anyone`, { field: 'code' });
  if (claimant !== null && c.claimant !== claimant) throw new DibsError('conflict', `code '${c.code}' is not held by '${claimant}'`, { field: 'claimant' });
}

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

function toStats(row: PoolRow): PoolStats {
  return { total: Number(row.total), free: Number(row.free), claimed: Number(row.claimed), redeemed: Number(row.redeemed), revoked: Number(row.revoked) };
}

function toPool(row: PoolRow): Pool {
  return {
    name: row.name,
    perClaimantLimit: row.per_claimant_limit,
    lowStockThreshold: row.low_stock_threshold,
    metadata: row.metadata,
    startsAt: iso(row.starts_at),
    expiresAt: iso(row.expires_at),
    maxRedemptions: row.max_redemptions,
    maxRedemptionsPerClaimant: row.max_redemptions_per_claimant,
    publicCodes: row.public_codes,
    codeFormat: row.code_format,
    createdAt: row.created_at.toISOString(),
    stats: toStats(row),
  };
}

function toCode(pool: string, row: CodeRow): CodeInfo {
  return { pool, code: row.code, status: row.status, claimant: row.claimant, claimedAt: iso(row.claimed_at), redeemedAt: iso(row.redeemed_at), orderId: row.redeemed_order ?? null };
}
