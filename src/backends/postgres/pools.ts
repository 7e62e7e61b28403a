/**
 * PostgreSQL coupon pools: every operation except claims (claim.ts) and the COPY import
 * (import-codes.ts). Each operation is one statement or one transaction; multi-step ones follow
 * the lock order of pools.sql (code rows → counter shard → pool row).
 */
import { refusal, scriptRefusal } from '../../core/refusals.js';
import { randomUUID } from 'node:crypto';
import type pg from 'pg';
import type { PoolBackend } from '../../core/pools/backend.js';
import { DibsError, notFound } from '../../core/errors.js';
import type {
  CodeFormat,
  ClaimManyResult,
  CodeInfo,
  CodeStatus,
  CodeWindow,
  ImportedCode,
  InsertResult,
  MultiUseCodeSpec,
  OutboxEvent,
  Page,
  Pool,
  PoolPatch,
  PoolSpec,
  PoolStats,
  Violation,
} from '../../core/types.js';
import { unredeemedEvent } from '../../core/events.js';
import {
  judgeHold,
  judgeLimitChange,
  judgeRedeem,
  judgeRelease,
  judgeReleaseHold,
  judgeRevoke,
  judgeUnredeem,
  judgeUnuse,
  type CodeState,
  type PoolRules,
} from '../../core/model/pools.js';
import { multiUseCode, useOf } from '../shared/pool-rules.js';
import { sqlPoolViolations } from '../shared/sql-pool-audit.js';
import { mergePoolSettings } from '../../core/pools/rules.js';
import { loadQueries } from '../shared/sql-files.js';
import { PgClaims } from './claim.js';
import { causeState, query, translate, withTransaction, type PgOptions } from './connection.js';
import { IMPORT_CONCURRENCY, insertCodes, refreshStatistics } from './import-codes.js';
import { settleLowStock } from './low-stock.js';
import { noteStoreRetry } from '../../tracing/retries.js';

const Q = loadQueries(new URL('./pools.sql', import.meta.url), [
  'poolByName',
  'listPools',
  'insertPool',
  'lockPoolRow',
  'maxHeldByOneClaimant',
  'bumpRulesVersion',
  'lockHighSlots',
  'compactSlots',
  'updatePool',
  'lockPoolCodes',
  'deleteKeys',
  'deletePool',
  'deleteEvents',
  'moveCounters',
  'codeForUpdate',
  'codeByValue',
  'setCodeState',
  'heldCodes',
  'exportAll',
  'exportByStatus',
  'countByStatus',
  'claimantsOverLimit',
  'holderMismatch',
  'keysWithForeignCodes',
  'lowStockState',
  'lowStockEventCount',
  'eventsAfter',
  'poolEventsAfter',
  'insertEvent',
  'codeByName',
  'poolIdByName',
  'now',
  'redeemedCounts',
  'freeSlot',
  'redeemDirect',
  'setHold',
  'setCodeWindow',
  'multiForUpdate',
  'multiByName',
  'insertMulti',
  'setMultiWindow',
  'moveUses',
  'useOfOrder',
  'usesByClaimant',
  'insertUse',
  'deleteUse',
  'holdMismatch',
  'multiUseMismatch',
  'multiUseOverClaimant',
  'multiUseRedeem',
]);

/** Thrown inside a redeem's transaction when the code is a multi-use one: roll back, redeem it by multi_use_redeem(). */
class MultiUseCode extends Error {}

interface MultiUseRow {
  o_outcome: string;
  o_max: number;
  o_per: number | null;
  o_uses: number;
  o_starts: Date | null;
  o_expires: Date | null;
  o_at: Date | null;
  o_limit: number | null;
  o_claimant: string | null;
  o_used_at: Date | null;
  o_pool_starts: Date | null;
  o_pool_expires: Date | null;
}

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
  hold_claimant?: string | null;
  hold_until?: Date | null;
  starts_at?: Date | null;
  expires_at?: Date | null;
}

interface MultiRow {
  code: string;
  max_uses: number;
  per_claimant: number | null;
  uses: number;
  starts_at: Date | null;
  expires_at: Date | null;
}

interface UseRow {
  order_id: string;
  claimant: string | null;
  used_at: Date;
}

/** A code's next state, its counter move, and an outbox event to record with it (given the transaction's time). */
type Decision = {
  status: CodeStatus;
  keepHolder: boolean;
  order: string | null;
  move: Move;
  direct?: { claimant: string; slot: number };
  event?: (at: string) => { type: string; idempotencyKey: string; payload: unknown };
};

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
  /** `pool\ncode` of codes seen to be multi-use (bounded). */
  private readonly multiUseCodes = new Set<string>();

  constructor(
    private readonly pool: pg.Pool,
    options: PgOptions,
  ) {
    this.claims = new PgClaims(pool, options);
    // leave a connection for claims while an import runs
    this.importConcurrency = Math.max(1, Math.min(IMPORT_CONCURRENCY, options.poolSize - 1));
  }

  async createPool(spec: PoolSpec): Promise<Pool> {
    const { rowCount } = await query(this.pool, Q.insertPool, [
      spec.name,
      spec.perClaimantLimit,
      spec.lowStockThreshold,
      JSON.stringify(spec.metadata),
      COUNTER_SHARDS,
      spec.startsAt,
      spec.expiresAt,
      spec.maxRedemptions,
      spec.maxRedemptionsPerClaimant,
      spec.publicCodes,
      spec.codeFormat === null ? null : JSON.stringify(spec.codeFormat),
    ]);
    if (!rowCount) throw refusal('pool_exists', { pool: spec.name });
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

  /**
   * A rule change, atomic with respect to every claim (I8): lock order code rows → counter shards →
   * pool row, as everywhere. The shards are locked first (bumpRulesVersion): that waits for every
   * claim that has already moved one under the old rules, so the limit check below sees its codes;
   * a claim that read the old rules and has not reached its shard yet takes nothing and runs again
   * under the new ones (claim.sql). Lowering the limit moves holdings above it into free slots
   * within it (compactSlots), so slots alone keep every claimant within the limit (I2).
   */
  async updatePool(name: string, patch: PoolPatch): Promise<Pool> {
    return againAsDeadlockVictim(() => this.updatePoolOnce(name, patch));
  }

  private async updatePoolOnce(name: string, patch: PoolPatch): Promise<Pool> {
    const threshold = await withTransaction(this.pool, async (client) => {
      const before = await this.poolRow(client, name);
      const lowering = patch.perClaimantLimit !== undefined && patch.perClaimantLimit < before.per_claimant_limit;
      if (lowering) await client.query(Q.lockHighSlots, [before.id, patch.perClaimantLimit]);
      await client.query(Q.bumpRulesVersion, [before.id]);
      await client.query(Q.lockPoolRow, [before.id]);
      // read again under the locks: another update may have committed while this one waited
      const row = await this.poolRow(client, name);
      if (row.id !== before.id) throw notFound('pool', name);
      const next = mergePoolSettings(toPool(row), patch);
      const limit = next.perClaimantLimit;
      if (limit < row.per_claimant_limit || lowering) {
        const { n } = (await client.query<{ n: number }>(Q.maxHeldByOneClaimant, [row.id])).rows[0]!;
        judgeLimitChange(limit, n);
        await client.query(Q.compactSlots, [row.id, limit]);
      }
      await client.query(Q.updatePool, [
        row.id,
        limit,
        next.lowStockThreshold,
        JSON.stringify(next.metadata),
        next.startsAt,
        next.expiresAt,
        next.maxRedemptions,
        next.maxRedemptionsPerClaimant,
        next.publicCodes,
        next.codeFormat === null ? null : JSON.stringify(next.codeFormat),
      ]);
      return next.lowStockThreshold;
    });
    this.claims.thresholdChanged(name, threshold);
    return this.getPool(name);
  }

  async deletePool(name: string): Promise<void> {
    return againAsDeadlockVictim(() => this.deletePoolOnce(name));
  }

  private async deletePoolOnce(name: string): Promise<void> {
    await withTransaction(this.pool, async (client) => {
      const row = await this.poolRow(client, name);
      // The documented lock order (code rows → counter shards → pool row) before the cascade takes
      // them in its own order: mid-storm, deleting straight away deadlocked with claims holding a
      // counter shard and waiting to reference the pool row. Bumping the rules version also makes a
      // claim that read the pool before this commit take nothing.
      await client.query(Q.lockPoolCodes, [row.id]);
      await client.query(Q.bumpRulesVersion, [row.id]);
      await client.query(Q.deleteKeys, [row.id]);
      await client.query(Q.deletePool, [row.id]);
      await client.query(Q.deleteEvents, [name]);
    });
  }

  async insertCodes(pool: string, codes: readonly ImportedCode[]): Promise<InsertResult> {
    return insertCodes(this.pool, pool, codes);
  }

  async importFinished(_pool: string, inserted: number): Promise<void> {
    await refreshStatistics(this.pool, inserted);
  }

  async claim(pool: string, claimant: string, count: number, idempotencyKey: string | null): Promise<ClaimManyResult> {
    return this.claims.claim({ pool, claimant, count, key: idempotencyKey });
  }

  async release(pool: string, code: string, claimant: string | null): Promise<CodeInfo> {
    return this.transition(pool, code, (c) => {
      judgeRelease(stateOf(c), claimant);
      return { status: 'free', keepHolder: false, order: null, move: { claimed: -1, free: 1 } };
    });
  }

  async redeem(pool: string, code: string, claimant: string | null, orderId: string | null): Promise<CodeInfo> {
    // codes known to be multi-use go straight to their one-call step (a code's kind never changes;
    // a pool deleted and re-created answers no_code and is looked up again)
    const known = `${pool}\n${code}`;
    if (this.multiUseCodes.has(known)) {
      const answer = await this.redeemMultiUse(pool, code, claimant, orderId);
      if (answer) return answer;
      this.multiUseCodes.delete(known);
    }
    // A direct redeem of a public code races a claim of the same claimant for a slot (23505):
    // the next attempt sees that claim.
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.redeemOnce(pool, code, claimant, orderId);
      } catch (error) {
        if (error instanceof MultiUseCode) {
          if (this.multiUseCodes.size >= 10_000) this.multiUseCodes.clear();
          this.multiUseCodes.add(known);
          const answer = await this.redeemMultiUse(pool, code, claimant, orderId);
          if (answer) return answer;
          throw notFound('code', code);
        }
        if (causeState(error) !== '23505' || attempt >= 3) throw translate(error);
      }
    }
  }

  /** One use of a multi-use code (multi_use_redeem: one call, the code's row lock held only inside it); undefined: no such multi-use code. */
  private async redeemMultiUse(
    pool: string,
    code: string,
    claimant: string | null,
    orderId: string | null,
  ): Promise<CodeInfo | undefined> {
    if (orderId === null) throw refusal('order_required', { code });
    const r = (await query<MultiUseRow>(this.pool, Q.multiUseRedeem, [pool, code, claimant, orderId])).rows[0]!;
    const m: MultiRow = {
      code,
      max_uses: r.o_max,
      per_claimant: r.o_per,
      uses: r.o_uses,
      starts_at: r.o_starts,
      expires_at: r.o_expires,
    };
    switch (r.o_outcome) {
      case 'used':
      case 'replayed':
        return toUse(pool, m, { order_id: orderId, claimant: r.o_claimant, used_at: r.o_used_at! });
      case 'no_pool':
        throw notFound('pool', pool);
      case 'no_code':
        return undefined;
      default:
        // a refusal by its reason id, with the instant and limit it names
        throw scriptRefusal(r.o_outcome, {
          pool,
          code,
          claimant,
          orderId,
          startsAt: iso(r.o_pool_starts),
          expiresAt: iso(r.o_pool_expires),
          at: iso(r.o_at),
          max: r.o_limit,
        });
    }
  }

  private redeemOnce(pool: string, code: string, claimant: string | null, orderId: string | null): Promise<CodeInfo> {
    return this.transition(
      pool,
      code,
      async (c, p, client) => {
        // a never-claimed code of a public pool: its redeemer becomes its holder, within their limit
        const mayBeDirect = c.status === 'free' && p.public_codes && claimant !== null;
        const limited = p.max_redemptions !== null || p.max_redemptions_per_claimant !== null;
        // limited pools and direct redeems count under the pool row lock, one redeem after the other;
        // the counts are read before the model judges (it asks for them only when it needs them)
        if (c.status !== 'redeemed' && (mayBeDirect || limited)) await client.query(Q.lockPoolRow, [p.id]);
        const held = mayBeDirect ? ((await client.query(Q.heldCodes, [p.id, claimant])).rowCount ?? 0) : 0;
        const holderIfAny = mayBeDirect ? claimant : c.claimant;
        const counts =
          limited && c.status !== 'redeemed' && holderIfAny !== null
            ? (await client.query<{ pool: number; claimant: number }>(Q.redeemedCounts, [p.id, holderIfAny])).rows[0]!
            : { pool: 0, claimant: 0 };
        const judged = judgeRedeem(rulesOf(pool, p), stateOf(c), {
          claimant,
          orderId,
          now: iso(p.now)!,
          heldBy: () => held,
          redeemed: () => counts,
        });
        if (judged.kind === 'replay') return null; // the same checkout again: its answer
        const { direct, holder } = judged;
        if (!direct)
          return { status: 'redeemed', keepHolder: true, order: orderId, move: { claimed: -1, redeemed: 1 } };
        const free = (
          await client.query<{ slot: number | null; per_claimant_limit: number }>(Q.freeSlot, [p.id, holder])
        ).rows[0]!;
        const slot = free.slot;
        if (slot === null) throw refusal('holder_at_limit', { pool, claimant: holder, limit: free.per_claimant_limit });
        return {
          status: 'redeemed',
          keepHolder: true,
          order: orderId,
          move: { free: -1, redeemed: 1 },
          direct: { claimant: holder, slot },
        };
      },
      async () => {
        throw new MultiUseCode(); // rolls this transaction back; redeem() runs multi_use_redeem
      },
    );
  }

  async unredeem(pool: string, code: string, orderId: string | null): Promise<CodeInfo> {
    return this.transition(
      pool,
      code,
      (c) => {
        judgeUnredeem(stateOf(c), orderId);
        return {
          status: 'claimed',
          keepHolder: true,
          order: null,
          move: { redeemed: -1, claimed: 1 },
          event: (at) =>
            unredeemedEvent(pool, c.code, c.claimant!, c.redeemed_order, iso(c.redeemed_at)!, at, randomUUID()),
        };
      },
      (m, p, client) => this.unredeemUse(pool, m, p, client, orderId),
    );
  }

  async hold(pool: string, code: string, claimant: string, ttlMs: number): Promise<CodeInfo> {
    return this.withCode(pool, code, async (c, p, client) => {
      // only a free public code needs the claimant's holdings: its redeemer will need room under the limit
      const held =
        c.status === 'free' && p.public_codes ? ((await client.query(Q.heldCodes, [p.id, claimant])).rowCount ?? 0) : 0;
      judgeHold(rulesOf(pool, p), stateOf(c), claimant, iso(p.now)!, () => held);
      return toCode(pool, (await client.query<CodeRow>(Q.setHold, [c.id, claimant, ttlMs])).rows[0]!, p.now);
    });
  }

  async releaseHold(pool: string, code: string, claimant: string | null): Promise<CodeInfo> {
    return this.withCode(pool, code, async (c, p, client) => {
      if (judgeReleaseHold(stateOf(c), claimant, iso(p.now)!) === 'none') return toCode(pool, c, p.now);
      return toCode(pool, (await client.query<CodeRow>(Q.setHold, [c.id, null, 0])).rows[0]!, p.now);
    });
  }

  async setCodeWindow(pool: string, code: string, window: CodeWindow): Promise<CodeInfo> {
    return this.withCode(
      pool,
      code,
      async (c, p, client) =>
        toCode(
          pool,
          (await client.query<CodeRow>(Q.setCodeWindow, [c.id, window.startsAt, window.expiresAt])).rows[0]!,
          p.now,
        ),
      async (m, p, client) =>
        toMultiCode(
          pool,
          (await client.query<MultiRow>(Q.setMultiWindow, [p.id, m.code, window.startsAt, window.expiresAt])).rows[0]!,
        ),
    );
  }

  async addMultiUseCode(pool: string, spec: MultiUseCodeSpec): Promise<CodeInfo> {
    return withTransaction(this.pool, async (client) => {
      const row = (await client.query<PoolWindowRow>(Q.poolIdByName, [pool])).rows[0];
      if (!row) throw notFound('pool', pool);
      const m = (
        await client.query<MultiRow>(Q.insertMulti, [
          row.id,
          spec.code,
          spec.uses,
          spec.usesPerClaimant,
          spec.startsAt,
          spec.expiresAt,
        ])
      ).rows[0];
      if (!m) throw refusal('code_exists', { code: spec.code });
      return toMultiCode(pool, m);
    });
  }

  private async unredeemUse(
    pool: string,
    m: MultiRow,
    p: PoolWindowRow,
    client: pg.ClientBase,
    orderId: string | null,
  ): Promise<CodeInfo> {
    const use = judgeUnuse(
      m.code,
      orderId,
      orderId === null ? undefined : (await client.query<UseRow>(Q.useOfOrder, [p.id, m.code, orderId])).rows[0],
    );
    await client.query(Q.deleteUse, [p.id, m.code, orderId]);
    await client.query(Q.moveUses, [p.id, m.code, -1]);
    const e = unredeemedEvent(
      pool,
      m.code,
      use.claimant ?? '',
      orderId,
      use.used_at.toISOString(),
      iso(p.now)!,
      randomUUID(),
    );
    await client.query(Q.insertEvent, [e.type, e.idempotencyKey, pool, JSON.stringify(e.payload)]);
    return toMultiCode(pool, { ...m, uses: m.uses - 1 });
  }

  /** One transaction on one locked code (single-use: `single`; multi-use: `multi`, or conflict without it). */
  private withCode<T>(
    pool: string,
    code: string,
    single: (c: CodeRow, p: PoolWindowRow, client: pg.ClientBase) => Promise<T>,
    multi?: (m: MultiRow, p: PoolWindowRow, client: pg.ClientBase) => Promise<T>,
  ): Promise<T> {
    return withTransaction(this.pool, async (client) => {
      const p = (await client.query<PoolWindowRow>(Q.poolIdByName, [pool])).rows[0];
      if (!p) throw notFound('pool', pool);
      const c = (await client.query<CodeRow>(Q.codeForUpdate, [p.id, code])).rows[0];
      if (c) return single(c, p, client);
      const m = (await client.query<MultiRow>(Q.multiForUpdate, [p.id, code])).rows[0];
      if (!m) throw notFound('code', code);
      if (!multi) throw refusal('multi_use_not_holdable', { code });
      return multi(m, p, client);
    });
  }

  async revoke(pool: string, code: string): Promise<CodeInfo> {
    return this.transition(pool, code, (c) => {
      judgeRevoke(stateOf(c));
      return { status: 'revoked', keepHolder: false, order: null, move: { [c.status]: -1, revoked: 1 } };
    });
  }

  async clock(): Promise<string> {
    return (await query<{ now: Date }>(this.pool, Q.now)).rows[0]!.now.toISOString();
  }

  async getCode(pool: string, code: string, claimant?: string | null): Promise<CodeInfo> {
    const c = (await query<CodeRow & { pool_id: string; now: Date }>(this.pool, Q.codeByName, [pool, code])).rows[0];
    if (!c) throw notFound('pool', pool);
    if (c.id !== null) return toCode(pool, c, c.now);
    const m = (
      await query<MultiRow & { by_claimant: number }>(this.pool, Q.multiByName, [pool, code, claimant ?? null])
    ).rows[0];
    if (!m) throw notFound('code', code);
    return toMultiCode(pool, m, claimant ? m.by_claimant : undefined);
  }

  async holdings(pool: string, claimant: string): Promise<CodeInfo[]> {
    const row = await this.poolRow(this.pool, pool);
    return (await query<CodeRow>(this.pool, Q.heldCodes, [row.id, claimant])).rows.map((c) => toCode(pool, c));
  }

  async stats(pool: string): Promise<PoolStats> {
    return toStats(await this.poolRow(this.pool, pool));
  }

  async *exportCodes(
    pool: string,
    { status, batchSize }: { status?: CodeStatus; batchSize: number },
  ): AsyncIterable<CodeInfo[]> {
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
    return withTransaction(
      this.pool,
      async (client) => {
        const row = await this.poolRow(client, pool);
        const rows = async <R extends pg.QueryResultRow>(q: string, params: unknown[] = [row.id]) =>
          (await client.query<R>(q, params)).rows;
        const { low_stock_events: crossings } = (await rows<{ low_stock_events: number }>(Q.lowStockState))[0]!;
        return sqlPoolViolations(pool, {
          perClaimantLimit: row.per_claimant_limit,
          counters: toStats(row),
          byStatus: await rows(Q.countByStatus),
          holderMismatch: await rows(Q.holderMismatch),
          holdMismatch: await rows(Q.holdMismatch),
          multiUseMismatch: await rows(Q.multiUseMismatch),
          multiUseOverClaimant: await rows(Q.multiUseOverClaimant),
          keysWithForeignCodes: await rows(Q.keysWithForeignCodes),
          claimantsOverLimit: await rows(Q.claimantsOverLimit, [row.id, row.per_claimant_limit]),
          lowStock: { crossings, events: (await rows<{ n: number }>(Q.lowStockEventCount, [pool]))[0]!.n },
        });
      },
      'BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY',
    );
  }

  async listEvents({ after, limit, pool }: { after?: string; limit: number; pool?: string }): Promise<OutboxEvent[]> {
    const from = after ?? '0';
    if (!/^\d{1,18}$/.test(from))
      throw new DibsError('invalid_input', `after: '${after}' is not an event id`, { field: 'after' });
    const { rows } = pool
      ? await query<{
          id: string;
          type: string;
          idempotency_key: string;
          payload: Record<string, unknown>;
          created_at: Date;
        }>(this.pool, Q.poolEventsAfter, [from, limit, pool])
      : await query<{
          id: string;
          type: string;
          idempotency_key: string;
          payload: Record<string, unknown>;
          created_at: Date;
        }>(this.pool, Q.eventsAfter, [from, limit]);
    return rows.map((e) => ({
      id: e.id,
      type: e.type,
      idempotencyKey: e.idempotency_key,
      payload: e.payload,
      createdAt: e.created_at.toISOString(),
    }));
  }

  // --- helpers ---

  private async poolRow(client: pg.Pool | pg.ClientBase, name: string): Promise<PoolRow> {
    const row = (
      client === this.pool
        ? await query<PoolRow>(this.pool, Q.poolByName, [name])
        : await client.query<PoolRow>(Q.poolByName, [name])
    ).rows[0];
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
    /** The same step for a multi-use code (redeem, unredeem); without it such a code is not_found. */
    multi?: (m: MultiRow, pool: PoolWindowRow, client: pg.ClientBase) => Promise<CodeInfo>,
  ): Promise<CodeInfo> {
    return withTransaction(this.pool, async (client) => {
      const row = (await client.query<PoolWindowRow>(Q.poolIdByName, [pool])).rows[0];
      if (!row) throw notFound('pool', pool);
      const c = (await client.query<CodeRow>(Q.codeForUpdate, [row.id, code])).rows[0];
      if (!c) {
        const m = multi ? (await client.query<MultiRow>(Q.multiForUpdate, [row.id, code])).rows[0] : undefined;
        if (m) return multi!(m, row, client);
        throw notFound('code', code);
      }
      const decided = await decide(c, row, client);
      if (decided === null) return toCode(pool, c);
      const { status, keepHolder, order, move, event } = decided;
      if (event) {
        const e = event(iso(row.now)!);
        await client.query(Q.insertEvent, [e.type, e.idempotencyKey, pool, JSON.stringify(e.payload)]);
      }
      const next = decided.direct
        ? (await client.query<CodeRow>(Q.redeemDirect, [c.id, decided.direct.claimant, decided.direct.slot, order]))
            .rows[0]!
        : (await client.query<CodeRow>(Q.setCodeState, [c.id, status, keepHolder, order])).rows[0]!;
      await client.query(Q.moveCounters, [
        row.id,
        Math.random(),
        0,
        move.free ?? 0,
        move.claimed ?? 0,
        move.redeemed ?? 0,
        move.revoked ?? 0,
      ]);
      if (row.low_stock_threshold !== null && move.free) await settleLowStock(client, row.id, move.free < 0);
      return toCode(pool, next);
    });
  }
}

/** The pool and a code as the model judges them. */
const rulesOf = (name: string, p: PoolWindowRow): PoolRules => ({
  name,
  perClaimantLimit: p.per_claimant_limit,
  publicCodes: p.public_codes,
  startsAt: iso(p.starts_at),
  expiresAt: iso(p.expires_at),
  maxRedemptions: p.max_redemptions,
  maxRedemptionsPerClaimant: p.max_redemptions_per_claimant,
});
const stateOf = (c: CodeRow): CodeState => ({
  code: c.code,
  status: c.status,
  claimant: c.claimant,
  redeemedAt: iso(c.redeemed_at),
  order: c.redeemed_order,
  hold:
    c.hold_claimant != null && c.hold_until != null
      ? { claimant: c.hold_claimant, until: c.hold_until.toISOString() }
      : null,
  ...codeWindowOf(c),
});

const iso = (d: Date | null) => (d === null ? null : d.toISOString());

function toStats(row: PoolRow): PoolStats {
  return {
    total: Number(row.total),
    free: Number(row.free),
    claimed: Number(row.claimed),
    redeemed: Number(row.redeemed),
    revoked: Number(row.revoked),
  };
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

/** A code as answered; `now` (the server's clock) reports a live hold, when given. */
function toCode(pool: string, row: CodeRow, now?: Date): CodeInfo {
  return {
    pool,
    code: row.code,
    status: row.status,
    claimant: row.claimant,
    claimedAt: iso(row.claimed_at),
    redeemedAt: iso(row.redeemed_at),
    orderId: row.redeemed_order ?? null,
    ...(row.starts_at || row.expires_at ? codeWindowOf(row) : {}),
    ...(now !== undefined && liveHold(row, now)
      ? { hold: { claimant: row.hold_claimant!, expiresAt: iso(row.hold_until!)! } }
      : {}),
  };
}

const liveHold = (c: CodeRow, now: Date) => c.hold_until != null && c.hold_until.getTime() > now.getTime();
const codeWindowOf = (c: { starts_at?: Date | null; expires_at?: Date | null }) => ({
  startsAt: iso(c.starts_at ?? null),
  expiresAt: iso(c.expires_at ?? null),
});

const toMultiCode = (pool: string, m: MultiRow, byClaimant?: number): CodeInfo =>
  multiUseCode(
    pool,
    { code: m.code, max: m.max_uses, used: m.uses, perClaimant: m.per_claimant, ...codeWindowOf(m) },
    byClaimant,
  );

const toUse = (pool: string, m: MultiRow, use: UseRow): CodeInfo =>
  useOf(toMultiCode(pool, m), { claimant: use.claimant, at: use.used_at.toISOString(), orderId: use.order_id });

/**
 * Runs a rule change or a deletion, again (up to 3 more times) when the server chose it as a
 * deadlock victim: a redeem that locks the pool row before its counter shard (direct or limited
 * redeems) can deadlock with their lock order (code rows → shards → pool row); the server broke
 * the deadlock by failing this transaction, which changed nothing.
 */
async function againAsDeadlockVictim<T>(step: () => Promise<T>): Promise<T> {
  for (let attempt = 0; ; attempt++) {
    try {
      return await step();
    } catch (error) {
      if (causeState(error) !== '40P01' || attempt >= 3) throw translate(error);
      noteStoreRetry();
    }
  }
}
