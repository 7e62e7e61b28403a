import { refusal } from '../../core/refusals.js';
import { randomUUID } from 'node:crypto';
import type { PoolBackend } from '../../core/pools/backend.js';
import { DibsError, isDibsError, notFound } from '../../core/errors.js';
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
  PoolSettings,
  PoolSpec,
  PoolStats,
  Violation,
} from '../../core/types.js';
import { lowStockEvent, unredeemedEvent } from '../../core/events.js';
import {
  judgeClaim,
  judgeClaimKey,
  judgeHold,
  judgeLimitChange,
  judgeRedeem,
  judgeRelease,
  judgeReleaseHold,
  judgeRevoke,
  judgeUnredeem,
  judgeUnuse,
  judgeUse,
  type CodeState,
  type PoolRules,
} from '../../core/model/pools.js';
import { mergePoolSettings } from '../../core/pools/rules.js';
import { loadQueries } from '../shared/sql-files.js';
import { withWindow } from '../shared/imported-code.js';
import { multiUseCode, useOf } from '../shared/pool-rules.js';
import { sqlPoolViolations } from '../shared/sql-pool-audit.js';
import { read, write, prepareAll, toEvent, type Db, type SqliteOptions, type Statements } from './database.js';

const Q = loadQueries(new URL('./pools.sql', import.meta.url), [
  'now',
  'poolByName',
  'poolToClaim',
  'insertPool',
  'insertNeverParked',
  'listPools',
  'updatePool',
  'maxHeldByOneClaimant',
  'deletePool',
  'deletePoolEvents',
  'insertCodes',
  'addFree',
  'claimKey',
  'insertClaimKey',
  'deleteClaimKey',
  'codesOfKey',
  'heldCodes',
  'unparkDue',
  'parkExpired',
  'takeFree',
  'markClaimed',
  'moveCounters',
  'fireLowStock',
  'insertEvent',
  'codeByValue',
  'setCodeState',
  'redeemedBy',
  'exportAll',
  'exportByStatus',
  'countByStatus',
  'claimantsOverLimit',
  'holderMismatch',
  'keysWithForeignCodes',
  'lowStockEventCount',
  'eventsAfter',
  'poolEventsAfter',
  'setHold',
  'setCodeWindow',
  'multiByValue',
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
]);

interface PoolRow {
  id: number;
  name: string;
  per_claimant_limit: number;
  low_stock_threshold: number | null;
  metadata: string;
  starts_at: string | null;
  expires_at: string | null;
  max_redemptions: number | null;
  max_redemptions_per_claimant: number | null;
  public_codes: number;
  code_format: string | null;
  created_at: string;
  total: number;
  free: number;
  claimed: number;
  redeemed: number;
  revoked: number;
  low_stock_armed: number;
  low_stock_events: number;
}

interface CodeRow {
  id: number;
  code: string;
  status: CodeStatus;
  claimant: string | null;
  claim_key: string | null;
  claimed_at: string | null;
  redeemed_at: string | null;
  redeemed_order: string | null;
  hold_claimant: string | null;
  hold_until: string | null;
  starts_at: string | null;
  expires_at: string | null;
}

interface MultiRow {
  code: string;
  max_uses: number;
  per_claimant: number | null;
  uses: number;
  starts_at: string | null;
  expires_at: string | null;
}

interface UseRow {
  order_id: string;
  claimant: string | null;
  used_at: string;
}

interface EventRow {
  id: number;
  type: string;
  idempotency_key: string;
  pool: string | null;
  payload: string;
  created_at: string;
}

/** How many codes one claim parks or brings back per step (a bounded batch, as on Redis). */
const PARK_BATCH = 200;

type CounterMove = { free?: number; claimed?: number; redeemed?: number; revoked?: number };

export class SqlitePools implements PoolBackend {
  private readonly stmt: Statements<typeof Q>;

  constructor(
    private readonly db: Db,
    private readonly options: SqliteOptions,
  ) {
    this.stmt = prepareAll(db, Q);
  }

  async createPool(spec: PoolSpec): Promise<Pool> {
    return write(this.db, this.options, () => {
      const { changes } = this.stmt.insertPool.run({ name: spec.name, ...settingsParams(spec) });
      if (changes === 0) throw refusal('pool_exists', { pool: spec.name });
      this.stmt.insertNeverParked.run(spec.name);
      return toPool(this.pool(spec.name));
    });
  }

  async getPool(name: string): Promise<Pool> {
    return read(this.options, () => toPool(this.pool(name)));
  }

  async listPools({ limit, after }: { limit: number; after?: string }): Promise<Page<Pool>> {
    return read(this.options, () => {
      const rows = this.stmt.listPools.all(after ?? '', limit + 1) as PoolRow[];
      const items = rows.slice(0, limit).map(toPool);
      return { items, nextCursor: rows.length > limit ? items[items.length - 1]!.name : null };
    });
  }

  async updatePool(name: string, patch: PoolPatch): Promise<Pool> {
    return write(this.db, this.options, () => {
      const row = this.pool(name);
      const next = mergePoolSettings(toPool(row), patch);
      if (next.perClaimantLimit < row.per_claimant_limit) {
        const { n } = this.stmt.maxHeldByOneClaimant.get(row.id) as { n: number };
        judgeLimitChange(next.perClaimantLimit, n);
      }
      this.stmt.updatePool.run({ id: row.id, ...settingsParams(next) });
      return toPool(this.pool(name));
    });
  }

  async deletePool(name: string): Promise<void> {
    await write(this.db, this.options, () => {
      this.stmt.deletePool.run(this.pool(name).id);
      // Its events go too: a pool re-created under the same name starts a fresh event history.
      this.stmt.deletePoolEvents.run(name);
    });
  }

  async insertCodes(pool: string, codes: readonly ImportedCode[]): Promise<InsertResult> {
    return write(this.db, this.options, () => {
      const row = this.pool(pool);
      const now = this.now();
      const rows = codes.map((entry) => {
        const { code, startsAt, expiresAt } = withWindow(entry);
        return [code, startsAt, expiresAt];
      });
      const inserted = this.stmt.insertCodes.run({ pool: row.id, now, codes: JSON.stringify(rows) }).changes;
      if (inserted > 0) this.stmt.addFree.run({ id: row.id, n: inserted });
      return { inserted, duplicates: codes.length - inserted };
    });
  }

  async claim(pool: string, claimant: string, count: number, key: string | null): Promise<ClaimManyResult> {
    const outcome = await write(this.db, this.options, (): ClaimManyResult | { refused: DibsError } => {
      const row = this.stmt.poolToClaim.get(pool) as (PoolRow & { never_parked: number }) | undefined;
      if (!row) throw notFound('pool', pool);
      const answer = (status: ClaimManyResult['status'], codes: string[], replayed: boolean): ClaimManyResult => ({
        pool,
        claimant,
        status,
        codes,
        replayed,
        held: this.heldCodes(row.id, claimant).map((c) => c.code),
      });

      let spent = false;
      if (key !== null) {
        const previous = this.stmt.claimKey.get(row.id, key) as { claimant: string; count: number } | undefined;
        if (previous) {
          judgeClaimKey(key, previous, claimant, count);
          const codes = (this.stmt.codesOfKey.all(row.id, key, claimant) as { code: string }[]).map((c) => c.code);
          if (codes.length > 0) return answer('claimed', codes, true);
          this.stmt.deleteClaimKey.run(row.id, key); // its codes were all released: the key is spent
          spent = true;
        }
      }

      // a replay above still answers; anything new happens only inside the pool's window
      const now = this.now();
      let take: number;
      let free: { id: number; code: string }[];
      try {
        take = judgeClaim(rulesOf(row), now, this.heldCodes(row.id, claimant).length, count);
        if (take === 0) return answer('already-held', [], false);
        free = this.takeFree(row.id, now, take, row.never_parked === 1);
        if (free.length === 0) throw refusal('pool_sold_out', { pool });
      } catch (error) {
        // a spent key stays forgotten whatever the claim that found it answers (as on every store):
        // commit that (and nothing else was written) and refuse after the commit
        if (spent && isDibsError(error)) return { refused: error };
        throw error;
      }

      for (const { id } of free) this.stmt.markClaimed.run({ id, claimant, key, now });
      if (key !== null) this.stmt.insertClaimKey.run(row.id, key, claimant, count, now);
      this.moveCounters(row, { free: -free.length, claimed: free.length }, now);
      return answer(
        'claimed',
        free.map((c) => c.code),
        false,
      );
    });
    if ('refused' in outcome) throw outcome.refused;
    return outcome;
  }

  async release(pool: string, code: string, claimant: string | null): Promise<CodeInfo> {
    return this.transition(pool, code, (_row, c) => {
      judgeRelease(stateOf(c), claimant);
      return {
        state: { status: 'free', claimant: null, claimKey: null, claimedAt: null, redeemedAt: null, order: null },
        move: { claimed: -1, free: 1 },
      };
    });
  }

  async redeem(pool: string, code: string, claimant: string | null, orderId: string | null): Promise<CodeInfo> {
    return this.transition(
      pool,
      code,
      (row, c, now) => {
        const judged = judgeRedeem(rulesOf(row), stateOf(c), {
          claimant,
          orderId,
          now,
          heldBy: (who) => this.heldCodes(row.id, who).length,
          redeemed: (holder) => ({
            pool: row.redeemed,
            claimant: (this.stmt.redeemedBy.get(row.id, holder) as { n: number }).n,
          }),
        });
        if (judged.kind === 'replay') return null; // the same checkout again: its answer
        const { holder, direct } = judged;
        return direct
          ? {
              state: {
                status: 'redeemed',
                claimant: holder,
                claimKey: null,
                claimedAt: now,
                redeemedAt: now,
                order: orderId,
              },
              move: { free: -1, redeemed: 1 },
            }
          : {
              state: {
                status: 'redeemed',
                claimant: holder,
                claimKey: c.claim_key,
                claimedAt: c.claimed_at,
                redeemedAt: now,
                order: orderId,
              },
              move: { claimed: -1, redeemed: 1 },
            };
      },
      (row, m, now) => this.redeemUse(row, m, claimant, orderId, now),
    );
  }

  async unredeem(pool: string, code: string, orderId: string | null): Promise<CodeInfo> {
    return this.transition(
      pool,
      code,
      (_row, c, now) => {
        judgeUnredeem(stateOf(c), orderId);
        const event = unredeemedEvent(pool, c.code, c.claimant!, c.redeemed_order, c.redeemed_at!, now, randomUUID());
        this.recordEvent(event, pool, now);
        return {
          state: {
            status: 'claimed',
            claimant: c.claimant,
            claimKey: c.claim_key,
            claimedAt: c.claimed_at,
            redeemedAt: null,
            order: null,
          },
          move: { redeemed: -1, claimed: 1 },
        };
      },
      (row, m, now) => this.unredeemUse(row, m, orderId, now),
    );
  }

  async revoke(pool: string, code: string): Promise<CodeInfo> {
    return this.transition(pool, code, (_row, c) => {
      judgeRevoke(stateOf(c));
      return {
        state: { status: 'revoked', claimant: null, claimKey: null, claimedAt: null, redeemedAt: null, order: null },
        move: { [c.status]: -1, revoked: 1 },
      };
    });
  }

  async hold(pool: string, code: string, claimant: string, ttlMs: number): Promise<CodeInfo> {
    return write(this.db, this.options, () => {
      const row = this.pool(pool);
      const c = this.codeOrMulti(row.id, code, () => {
        throw refusal('multi_use_not_holdable', { code });
      });
      const now = this.now();
      judgeHold(rulesOf(row), stateOf(c), claimant, now, (who) => this.heldCodes(row.id, who).length);
      this.stmt.setHold.run({ id: c.id, claimant, until: new Date(Date.parse(now) + ttlMs).toISOString() });
      return toCode(pool, this.code(row.id, code), now);
    });
  }

  async releaseHold(pool: string, code: string, claimant: string | null): Promise<CodeInfo> {
    return write(this.db, this.options, () => {
      const row = this.pool(pool);
      const c = this.codeOrMulti(row.id, code, () => {
        throw refusal('multi_use_not_holdable', { code });
      });
      const now = this.now();
      if (judgeReleaseHold(stateOf(c), claimant, now) === 'none') return toCode(pool, c, now);
      this.stmt.setHold.run({ id: c.id, claimant: null, until: null });
      return toCode(pool, this.code(row.id, code), now);
    });
  }

  async setCodeWindow(pool: string, code: string, window: CodeWindow): Promise<CodeInfo> {
    return write(this.db, this.options, () => {
      const row = this.pool(pool);
      const m = this.stmt.multiByValue.get(row.id, code) as MultiRow | undefined;
      if (m) {
        this.stmt.setMultiWindow.run({ pool: row.id, code, ...window });
        return toMultiCode(pool, this.stmt.multiByValue.get(row.id, code) as MultiRow);
      }
      const c = this.code(row.id, code);
      this.stmt.setCodeWindow.run({ id: c.id, ...window });
      return toCode(pool, this.code(row.id, code), this.now());
    });
  }

  async addMultiUseCode(pool: string, spec: MultiUseCodeSpec): Promise<CodeInfo> {
    return write(this.db, this.options, () => {
      const row = this.pool(pool);
      const { changes } = this.stmt.insertMulti.run({
        pool: row.id,
        code: spec.code,
        uses: spec.uses,
        perClaimant: spec.usesPerClaimant,
        startsAt: spec.startsAt,
        expiresAt: spec.expiresAt,
        now: this.now(),
      });
      if (changes === 0) throw refusal('code_exists', { code: spec.code });
      return toMultiCode(pool, this.stmt.multiByValue.get(row.id, spec.code) as MultiRow);
    });
  }

  async clock(): Promise<string> {
    return read(this.options, () => this.now());
  }

  async getCode(pool: string, code: string, claimant?: string | null): Promise<CodeInfo> {
    return read(this.options, () => {
      const { id } = this.pool(pool);
      const m = this.stmt.multiByValue.get(id, code) as MultiRow | undefined;
      if (m)
        return toMultiCode(
          pool,
          m,
          claimant ? (this.stmt.usesByClaimant.get(id, code, claimant) as { n: number }).n : undefined,
        );
      return toCode(pool, this.code(id, code), this.now());
    });
  }

  async holdings(pool: string, claimant: string): Promise<CodeInfo[]> {
    return read(this.options, () => this.heldCodes(this.pool(pool).id, claimant).map((c) => toCode(pool, c)));
  }

  async stats(pool: string): Promise<PoolStats> {
    return read(this.options, () => toStats(this.pool(pool)));
  }

  async *exportCodes(
    pool: string,
    { status, batchSize }: { status?: CodeStatus; batchSize: number },
  ): AsyncIterable<CodeInfo[]> {
    const { id } = await read(this.options, () => this.pool(pool));
    let after = 0;
    for (;;) {
      const rows = await read(
        this.options,
        () =>
          (status
            ? this.stmt.exportByStatus.all(id, status, after, batchSize)
            : this.stmt.exportAll.all(id, after, batchSize)) as CodeRow[],
      );
      if (rows.length === 0) return;
      after = rows[rows.length - 1]!.id;
      yield rows.map((r) => toCode(pool, r));
    }
  }

  async audit(pool: string): Promise<Violation[]> {
    // One read transaction: a consistent snapshot of counters and rows.
    return read(this.options, () =>
      this.db
        .transaction(() => {
          const row = this.pool(pool);
          const rows = <R>(name: keyof typeof this.stmt, ...params: unknown[]) =>
            this.stmt[name].all(...(params.length > 0 ? params : [row.id])) as R[];
          return sqlPoolViolations(pool, {
            perClaimantLimit: row.per_claimant_limit,
            counters: toStats(row),
            byStatus: rows('countByStatus'),
            holderMismatch: rows('holderMismatch'),
            holdMismatch: rows('holdMismatch'),
            multiUseMismatch: rows('multiUseMismatch'),
            multiUseOverClaimant: rows('multiUseOverClaimant'),
            keysWithForeignCodes: rows('keysWithForeignCodes'),
            claimantsOverLimit: rows('claimantsOverLimit', row.id, row.per_claimant_limit),
            lowStock: {
              crossings: row.low_stock_events,
              events: (this.stmt.lowStockEventCount.get(pool) as { n: number }).n,
            },
          });
        })
        .deferred(),
    );
  }

  async listEvents({ after, limit, pool }: { after?: string; limit: number; pool?: string }): Promise<OutboxEvent[]> {
    const from = after === undefined ? 0 : Number(after);
    if (!Number.isSafeInteger(from))
      throw new DibsError('invalid_input', `after: '${after}' is not an event id`, { field: 'after' });
    return read(this.options, () => {
      const rows = (
        pool ? this.stmt.poolEventsAfter.all(pool, from, limit) : this.stmt.eventsAfter.all(from, limit)
      ) as EventRow[];
      return rows.map(toEvent);
    });
  }

  // --- helpers (all run inside a transaction or a read) ---

  private pool(name: string): PoolRow {
    const row = this.stmt.poolByName.get(name) as PoolRow | undefined;
    if (!row) throw notFound('pool', name);
    return row;
  }

  private code(poolId: number, code: string): CodeRow {
    const row = this.stmt.codeByValue.get(poolId, code) as CodeRow | undefined;
    if (!row) throw notFound('code', code);
    return row;
  }

  /** The single-use code, or — when the pool has it as a multi-use code — `onMulti()`. */
  private codeOrMulti(poolId: number, code: string, onMulti: () => never): CodeRow {
    const row = this.stmt.codeByValue.get(poolId, code) as CodeRow | undefined;
    if (row) return row;
    if (this.stmt.multiByValue.get(poolId, code)) onMulti();
    throw notFound('code', code);
  }

  private redeemUse(row: PoolRow, m: MultiRow, claimant: string | null, orderId: string | null, now: string): CodeInfo {
    const prior =
      orderId === null ? undefined : (this.stmt.useOfOrder.get(row.id, m.code, orderId) as UseRow | undefined);
    const judged = judgeUse(
      rulesOf(row),
      {
        code: m.code,
        maxUses: m.max_uses,
        perClaimant: m.per_claimant,
        uses: m.uses,
        startsAt: m.starts_at,
        expiresAt: m.expires_at,
      },
      {
        claimant,
        orderId,
        now,
        prior: prior ?? null,
        usesBy: (who) => (this.stmt.usesByClaimant.get(row.id, m.code, who) as { n: number }).n,
      },
    );
    if (judged === 'replay') return toUse(row.name, m, prior!); // the same checkout again: its use, unchanged
    if (orderId === null) throw new Error('unreachable: judgeUse requires an order');
    this.stmt.insertUse.run({ pool: row.id, code: m.code, order: orderId, claimant, now });
    this.stmt.moveUses.run({ pool: row.id, code: m.code, n: 1 });
    return toUse(row.name, { ...m, uses: m.uses + 1 }, { order_id: orderId, claimant, used_at: now });
  }

  private unredeemUse(row: PoolRow, m: MultiRow, orderId: string | null, now: string): CodeInfo {
    const use = judgeUnuse(
      m.code,
      orderId,
      orderId === null ? undefined : (this.stmt.useOfOrder.get(row.id, m.code, orderId) as UseRow | undefined),
    );
    this.stmt.deleteUse.run(row.id, m.code, orderId);
    this.stmt.moveUses.run({ pool: row.id, code: m.code, n: -1 });
    const event = unredeemedEvent(row.name, m.code, use.claimant ?? '', orderId, use.used_at, now, randomUUID());
    this.recordEvent(event, row.name, now);
    return toMultiCode(row.name, { ...m, uses: m.uses - 1 });
  }

  /**
   * Up to `n` free codes that may be handed out now. Parked codes that are due come back first, a
   * bounded batch at a time: another batch only while the claim is still short and the last one
   * was full, so one claim never moves more than it needs, and a claim is never sold out while due
   * codes wait. A pool that never had a code to park or expire (`neverParked`, migration 016) has
   * none to move: the upkeep is skipped.
   */
  private takeFree(poolId: number, now: string, n: number, neverParked: boolean): { id: number; code: string }[] {
    if (neverParked) return this.stmt.takeFree.all({ pool: poolId, now, n }) as { id: number; code: string }[];
    this.stmt.parkExpired.run({ pool: poolId, now, batch: PARK_BATCH });
    for (;;) {
      const unparked = this.stmt.unparkDue.run({ pool: poolId, now, batch: PARK_BATCH }).changes;
      const free = this.stmt.takeFree.all({ pool: poolId, now, n }) as { id: number; code: string }[];
      if (free.length >= n || unparked < PARK_BATCH) return free;
    }
  }

  private heldCodes(poolId: number, claimant: string): CodeRow[] {
    return this.stmt.heldCodes.all(poolId, claimant) as CodeRow[];
  }

  /** An outbox event of `pool`, in the step's transaction. */
  private recordEvent(
    event: { type: string; idempotencyKey: string; payload: unknown },
    pool: string,
    now: string,
  ): void {
    this.stmt.insertEvent.run({
      type: event.type,
      key: event.idempotencyKey,
      pool,
      payload: JSON.stringify(event.payload),
      now,
    });
  }

  private now(): string {
    return (this.stmt.now.get() as { now: string }).now;
  }

  /** Moves counters and, when free has just dropped to/below the threshold, records the event. */
  private moveCounters(row: PoolRow, move: CounterMove, now: string): void {
    const after = this.stmt.moveCounters.get({
      id: row.id,
      free: 0,
      claimed: 0,
      redeemed: 0,
      revoked: 0,
      ...move,
    }) as PoolRow;
    const dropped = (move.free ?? 0) < 0;
    if (
      dropped &&
      after.low_stock_threshold !== null &&
      after.low_stock_armed === 1 &&
      after.free <= after.low_stock_threshold
    ) {
      const { low_stock_events: crossing } = this.stmt.fireLowStock.get(row.id) as PoolRow;
      const event = lowStockEvent(row.name, crossing, after.free, after.low_stock_threshold);
      this.recordEvent(event, row.name, now);
    }
  }

  private async transition(
    pool: string,
    code: string,
    /** The code's next state and counter move, or null: leave it as it is and answer with it. */
    decide: (
      row: PoolRow,
      c: CodeRow,
      now: string,
    ) => {
      state: {
        status: CodeStatus;
        claimant: string | null;
        claimKey: string | null;
        claimedAt: string | null;
        redeemedAt: string | null;
        order: string | null;
      };
      move: CounterMove;
    } | null,
    /** The same step for a multi-use code (redeem, unredeem); without it such a code is not_found. */
    multi?: (row: PoolRow, m: MultiRow, now: string) => CodeInfo,
  ): Promise<CodeInfo> {
    return write(this.db, this.options, () => {
      const row = this.pool(pool);
      const found = this.stmt.codeByValue.get(row.id, code) as CodeRow | undefined;
      if (!found && multi) {
        const m = this.stmt.multiByValue.get(row.id, code) as MultiRow | undefined;
        if (m) return multi(row, m, this.now());
      }
      const c = found ?? this.code(row.id, code);
      const now = this.now();
      const decided = decide(row, c, now);
      if (decided === null) return toCode(pool, c);
      const { state, move } = decided;
      this.stmt.setCodeState.run({ id: c.id, ...state });
      this.moveCounters(row, move, now);
      return toCode(pool, this.code(row.id, code));
    });
  }
}

/** The pool and a code as the model judges them. */
const rulesOf = (row: PoolRow): PoolRules => ({
  name: row.name,
  perClaimantLimit: row.per_claimant_limit,
  publicCodes: row.public_codes === 1,
  startsAt: row.starts_at,
  expiresAt: row.expires_at,
  maxRedemptions: row.max_redemptions,
  maxRedemptionsPerClaimant: row.max_redemptions_per_claimant,
});
const stateOf = (c: CodeRow): CodeState => ({
  code: c.code,
  status: c.status,
  claimant: c.claimant,
  redeemedAt: c.redeemed_at,
  order: c.redeemed_order,
  hold: c.hold_claimant !== null && c.hold_until !== null ? { claimant: c.hold_claimant, until: c.hold_until } : null,
  startsAt: c.starts_at,
  expiresAt: c.expires_at,
});

function toStats(row: PoolRow): PoolStats {
  return { total: row.total, free: row.free, claimed: row.claimed, redeemed: row.redeemed, revoked: row.revoked };
}

/** A pool's settings as the pool statements bind them (JSON text, 0/1). */
function settingsParams(s: PoolSettings) {
  return {
    ...s,
    metadata: JSON.stringify(s.metadata),
    publicCodes: s.publicCodes ? 1 : 0,
    codeFormat: s.codeFormat ? JSON.stringify(s.codeFormat) : null,
  };
}

function toPool(row: PoolRow): Pool {
  return {
    name: row.name,
    perClaimantLimit: row.per_claimant_limit,
    lowStockThreshold: row.low_stock_threshold,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    startsAt: row.starts_at,
    expiresAt: row.expires_at,
    maxRedemptions: row.max_redemptions,
    maxRedemptionsPerClaimant: row.max_redemptions_per_claimant,
    publicCodes: row.public_codes === 1,
    codeFormat: row.code_format === null ? null : (JSON.parse(row.code_format) as CodeFormat),
    createdAt: row.created_at,
    stats: toStats(row),
  };
}

/** A code as answered; `now` (the store's clock) reports a live hold, when given. */
function toCode(pool: string, row: CodeRow, now?: string): CodeInfo {
  return {
    pool,
    code: row.code,
    status: row.status,
    claimant: row.claimant,
    claimedAt: row.claimed_at,
    redeemedAt: row.redeemed_at,
    orderId: row.redeemed_order,
    ...(row.starts_at !== null || row.expires_at !== null ? codeWindowOf(row) : {}),
    ...(now !== undefined && liveHold(row, now)
      ? { hold: { claimant: row.hold_claimant!, expiresAt: row.hold_until! } }
      : {}),
  };
}

const liveHold = (c: CodeRow, now: string) => c.hold_until !== null && c.hold_until > now;
const codeWindowOf = (c: { starts_at: string | null; expires_at: string | null }) => ({
  startsAt: c.starts_at,
  expiresAt: c.expires_at,
});

const toMultiCode = (pool: string, m: MultiRow, byClaimant?: number): CodeInfo =>
  multiUseCode(
    pool,
    { code: m.code, max: m.max_uses, used: m.uses, perClaimant: m.per_claimant, ...codeWindowOf(m) },
    byClaimant,
  );

const toUse = (pool: string, m: MultiRow, use: UseRow): CodeInfo =>
  useOf(toMultiCode(pool, m), { claimant: use.claimant, at: use.used_at, orderId: use.order_id });
