import { randomUUID } from 'node:crypto';
import type { PoolBackend } from '../../core/backend.js';
import { DibsError, notFound, soldOut } from '../../core/errors.js';
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
import { lowStockEvent, unredeemedEvent } from '../../core/events.js';
import { assertInWindow } from '../../core/window.js';
import { loadQueries } from '../shared/sql-files.js';
import { alreadyRedeemed, assertRedeemedFor, assertRedemptionRoom, claimantRequired, holderAtLimit, counterViolations, keyReused, limitBelowHoldings } from '../shared/pool-rules.js';
import { read, write, prepareAll, toEvent, type Db, type SqliteOptions, type Statements } from './database.js';

const Q = loadQueries(new URL('./pools.sql', import.meta.url), [
  'now', 'poolByName', 'insertPool', 'listPools', 'updatePool', 'maxHeldByOneClaimant', 'deletePool', 'deletePoolEvents',
  'insertCode', 'addFree', 'claimKey', 'insertClaimKey', 'deleteClaimKey', 'codesOfKey', 'heldCodes',
  'takeFree', 'markClaimed', 'moveCounters', 'fireLowStock', 'insertEvent', 'codeByValue', 'setCodeState', 'redeemedBy',
  'exportAll', 'exportByStatus', 'countByStatus', 'claimantsOverLimit', 'holderMismatch',
  'keysWithForeignCodes', 'lowStockEventCount', 'eventsAfter', 'poolEventsAfter',
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
}

interface EventRow {
  id: number;
  type: string;
  idempotency_key: string;
  pool: string | null;
  payload: string;
  created_at: string;
}

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
      const { changes } = this.stmt.insertPool.run({ ...spec, metadata: JSON.stringify(spec.metadata), publicCodes: spec.publicCodes ? 1 : 0, codeFormat: spec.codeFormat ? JSON.stringify(spec.codeFormat) : null });
      if (changes === 0) throw new DibsError('already_exists', `pool '${spec.name}' already exists`, { field: 'name' });
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
      const perClaimantLimit = patch.perClaimantLimit ?? row.per_claimant_limit;
      if (perClaimantLimit < row.per_claimant_limit) {
        const { n } = this.stmt.maxHeldByOneClaimant.get(row.id) as { n: number };
        if (n > perClaimantLimit) throw limitBelowHoldings(perClaimantLimit, n);
      }
      this.stmt.updatePool.run({
        id: row.id,
        perClaimantLimit,
        lowStockThreshold: patch.lowStockThreshold === undefined ? row.low_stock_threshold : patch.lowStockThreshold,
        metadata: patch.metadata === undefined ? row.metadata : JSON.stringify(patch.metadata),
        startsAt: patch.startsAt === undefined ? row.starts_at : patch.startsAt,
        expiresAt: patch.expiresAt === undefined ? row.expires_at : patch.expiresAt,
        maxRedemptions: patch.maxRedemptions === undefined ? row.max_redemptions : patch.maxRedemptions,
        maxRedemptionsPerClaimant: patch.maxRedemptionsPerClaimant === undefined ? row.max_redemptions_per_claimant : patch.maxRedemptionsPerClaimant,
        publicCodes: patch.publicCodes === undefined ? row.public_codes : patch.publicCodes ? 1 : 0,
        codeFormat: patch.codeFormat === undefined ? row.code_format : patch.codeFormat === null ? null : JSON.stringify(patch.codeFormat),
      });
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

  async insertCodes(pool: string, codes: readonly string[]): Promise<InsertResult> {
    return write(this.db, this.options, () => {
      const row = this.pool(pool);
      let inserted = 0;
      for (const code of codes) inserted += this.stmt.insertCode.run(row.id, code).changes;
      if (inserted > 0) this.stmt.addFree.run({ id: row.id, n: inserted });
      return { inserted, duplicates: codes.length - inserted };
    });
  }

  async claim(pool: string, claimant: string, count: number, key: string | null): Promise<ClaimManyResult> {
    return write(this.db, this.options, () => {
      const row = this.pool(pool);
      const answer = (status: ClaimManyResult['status'], codes: string[], replayed: boolean): ClaimManyResult => ({
        pool, claimant, status, codes, replayed, held: this.heldCodes(row.id, claimant).map((c) => c.code),
      });

      if (key !== null) {
        const previous = this.stmt.claimKey.get(row.id, key) as { claimant: string; count: number } | undefined;
        if (previous) {
          if (previous.claimant !== claimant || previous.count !== count) throw keyReused(key, previous);
          const codes = (this.stmt.codesOfKey.all(row.id, key, claimant) as { code: string }[]).map((c) => c.code);
          if (codes.length > 0) return answer('claimed', codes, true);
          this.stmt.deleteClaimKey.run(row.id, key); // its codes were all released: the key is spent
        }
      }

      // a replay above still answers; anything new happens only inside the pool's window
      assertInWindow(pool, windowOf(row), this.now());
      const room = row.per_claimant_limit - this.heldCodes(row.id, claimant).length;
      if (room <= 0) return answer('already-held', [], false);
      const free = this.stmt.takeFree.all(row.id, Math.min(count, room)) as { id: number; code: string }[];
      if (free.length === 0) throw soldOut(pool);

      const now = this.now();
      for (const { id } of free) this.stmt.markClaimed.run({ id, claimant, key, now });
      if (key !== null) this.stmt.insertClaimKey.run(row.id, key, claimant, count, now);
      this.moveCounters(row, { free: -free.length, claimed: free.length }, now);
      return answer('claimed', free.map((c) => c.code), false);
    });
  }

  async release(pool: string, code: string, claimant: string | null): Promise<CodeInfo> {
    return this.transition(pool, code, (row, c) => {
      if (c.status === 'redeemed') throw new DibsError('conflict', `code '${code}' is redeemed and cannot be released`, { field: 'code' });
      assertHeld(c, claimant);
      return { state: { status: 'free', claimant: null, claimKey: null, claimedAt: null, redeemedAt: null, order: null }, move: { claimed: -1, free: 1 } };
    });
  }

  async redeem(pool: string, code: string, claimant: string | null, orderId: string | null): Promise<CodeInfo> {
    return this.transition(pool, code, (row, c, now) => {
      if (c.status === 'redeemed') {
        if (orderId !== null && c.redeemed_order === orderId) return null; // the same checkout again: its answer
        throw alreadyRedeemed(code, c.redeemed_at!);
      }
      // a never-claimed code of a public pool: its redeemer becomes its holder, within their limit
      const direct = c.status === 'free' && row.public_codes === 1;
      if (direct) {
        if (claimant === null) throw claimantRequired(code);
        if (this.heldCodes(row.id, claimant).length >= row.per_claimant_limit) throw holderAtLimit(pool, claimant, row.per_claimant_limit);
      } else {
        assertHeld(c, claimant);
      }
      const holder = direct ? claimant! : c.claimant!;
      assertInWindow(pool, windowOf(row), now);
      if (row.max_redemptions !== null || row.max_redemptions_per_claimant !== null) {
        const { n } = this.stmt.redeemedBy.get(row.id, holder) as { n: number };
        assertRedemptionRoom(pool, limitsOf(row), { pool: row.redeemed, claimant: n }, holder);
      }
      return direct
        ? { state: { status: 'redeemed', claimant: holder, claimKey: null, claimedAt: now, redeemedAt: now, order: orderId }, move: { free: -1, redeemed: 1 } }
        : { state: { status: 'redeemed', claimant: holder, claimKey: c.claim_key, claimedAt: c.claimed_at, redeemedAt: now, order: orderId }, move: { claimed: -1, redeemed: 1 } };
    });
  }

  async unredeem(pool: string, code: string, orderId: string | null): Promise<CodeInfo> {
    return this.transition(pool, code, (row, c, now) => {
      assertRedeemedFor(c, orderId);
      const event = unredeemedEvent(pool, c.code, c.claimant!, c.redeemed_order, c.redeemed_at!, now, randomUUID());
      this.stmt.insertEvent.run({ type: event.type, key: event.idempotencyKey, pool, payload: JSON.stringify(event.payload), now });
      return { state: { status: 'claimed', claimant: c.claimant, claimKey: c.claim_key, claimedAt: c.claimed_at, redeemedAt: null, order: null }, move: { redeemed: -1, claimed: 1 } };
    });
  }

  async revoke(pool: string, code: string): Promise<CodeInfo> {
    return this.transition(pool, code, (row, c) => {
      if (c.status === 'revoked') throw new DibsError('conflict', `code '${code}' is already revoked`, { field: 'code' });
      return { state: { status: 'revoked', claimant: null, claimKey: null, claimedAt: null, redeemedAt: null, order: null }, move: { [c.status]: -1, revoked: 1 } };
    });
  }

  async clock(): Promise<string> {
    return read(this.options, () => this.now());
  }

  async getCode(pool: string, code: string): Promise<CodeInfo> {
    return read(this.options, () => toCode(pool, this.code(this.pool(pool).id, code)));
  }

  async holdings(pool: string, claimant: string): Promise<CodeInfo[]> {
    return read(this.options, () => this.heldCodes(this.pool(pool).id, claimant).map((c) => toCode(pool, c)));
  }

  async stats(pool: string): Promise<PoolStats> {
    return read(this.options, () => toStats(this.pool(pool)));
  }

  async *exportCodes(pool: string, { status, batchSize }: { status?: CodeStatus; batchSize: number }): AsyncIterable<CodeInfo[]> {
    const { id } = await read(this.options, () => this.pool(pool));
    let after = 0;
    for (;;) {
      const rows = await read(this.options, () =>
        (status ? this.stmt.exportByStatus.all(id, status, after, batchSize) : this.stmt.exportAll.all(id, after, batchSize)) as CodeRow[]);
      if (rows.length === 0) return;
      after = rows[rows.length - 1]!.id;
      yield rows.map((r) => toCode(pool, r));
    }
  }

  async audit(pool: string): Promise<Violation[]> {
    // One read transaction: a consistent snapshot of counters and rows.
    return read(this.options, () => this.db.transaction(() => {
      const row = this.pool(pool);
      const violations: Violation[] = [];
      for (const c of this.stmt.holderMismatch.all(row.id) as CodeRow[]) {
        violations.push({ invariant: 'I1', pool, code: c.code, message: `code '${c.code}' is ${c.status} but its holder is ${c.claimant === null ? 'missing' : `'${c.claimant}'`}` });
      }
      for (const k of this.stmt.keysWithForeignCodes.all(row.id) as { key: string; claimant: string; code: string; holder: string | null }[]) {
        violations.push({ invariant: 'I2', pool, code: k.code, claimant: k.claimant, message: `idempotency key '${k.key}' of '${k.claimant}' points at code '${k.code}' held by ${k.holder === null ? 'nobody' : `'${k.holder}'`}` });
      }
      for (const c of this.stmt.claimantsOverLimit.all(row.id, row.per_claimant_limit) as { claimant: string; n: number }[]) {
        violations.push({ invariant: 'I2', pool, claimant: c.claimant, expected: row.per_claimant_limit, actual: c.n, message: `claimant '${c.claimant}' holds ${c.n} codes, limit is ${row.per_claimant_limit}` });
      }
      const ledger: PoolStats = { total: 0, free: 0, claimed: 0, redeemed: 0, revoked: 0 };
      for (const { status, n } of this.stmt.countByStatus.all(row.id) as { status: CodeStatus; n: number }[]) {
        ledger[status] = n;
        ledger.total += n;
      }
      violations.push(...counterViolations(pool, toStats(row), ledger));
      const { n: events } = this.stmt.lowStockEventCount.get(pool) as { n: number };
      if (events !== row.low_stock_events) {
        violations.push({ invariant: 'I7', pool, expected: row.low_stock_events, actual: events, message: `${row.low_stock_events} low-stock crossings were recorded but the outbox holds ${events} low-stock events` });
      }
      return violations;
    }).deferred());
  }

  async listEvents({ after, limit, pool }: { after?: string; limit: number; pool?: string }): Promise<OutboxEvent[]> {
    const from = after === undefined ? 0 : Number(after);
    if (!Number.isSafeInteger(from)) throw new DibsError('invalid_input', `after: '${after}' is not an event id`, { field: 'after' });
    return read(this.options, () => {
      const rows = (pool ? this.stmt.poolEventsAfter.all(pool, from, limit) : this.stmt.eventsAfter.all(from, limit)) as EventRow[];
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

  private heldCodes(poolId: number, claimant: string): CodeRow[] {
    return this.stmt.heldCodes.all(poolId, claimant) as CodeRow[];
  }

  private now(): string {
    return (this.stmt.now.get() as { now: string }).now;
  }

  /** Moves counters and, when free has just dropped to/below the threshold, records the event. */
  private moveCounters(row: PoolRow, move: CounterMove, now: string): void {
    const after = this.stmt.moveCounters.get({ id: row.id, free: 0, claimed: 0, redeemed: 0, revoked: 0, ...move }) as PoolRow;
    const dropped = (move.free ?? 0) < 0;
    if (dropped && after.low_stock_threshold !== null && after.low_stock_armed === 1 && after.free <= after.low_stock_threshold) {
      const { low_stock_events: crossing } = this.stmt.fireLowStock.get(row.id) as PoolRow;
      const event = lowStockEvent(row.name, crossing, after.free, after.low_stock_threshold);
      this.stmt.insertEvent.run({ type: event.type, key: event.idempotencyKey, pool: row.name, payload: JSON.stringify(event.payload), now });
    }
  }

  private async transition(
    pool: string,
    code: string,
    /** The code's next state and counter move, or null: leave it as it is and answer with it. */
    decide: (row: PoolRow, c: CodeRow, now: string) => { state: { status: CodeStatus; claimant: string | null; claimKey: string | null; claimedAt: string | null; redeemedAt: string | null; order: string | null }; move: CounterMove } | null,
  ): Promise<CodeInfo> {
    return write(this.db, this.options, () => {
      const row = this.pool(pool);
      const c = this.code(row.id, code);
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

function assertHeld(c: CodeRow, claimant: string | null): void {
  if (c.status !== 'claimed' && c.status !== 'redeemed') throw new DibsError('conflict', `code '${c.code}' is ${c.status}, not held by anyone`, { field: 'code' });
  if (claimant !== null && c.claimant !== claimant) throw new DibsError('conflict', `code '${c.code}' is not held by '${claimant}'`, { field: 'claimant' });
}

const windowOf = (row: PoolRow) => ({ startsAt: row.starts_at, expiresAt: row.expires_at });
const limitsOf = (row: PoolRow) => ({ maxRedemptions: row.max_redemptions, maxRedemptionsPerClaimant: row.max_redemptions_per_claimant });

function toStats(row: PoolRow): PoolStats {
  return { total: row.total, free: row.free, claimed: row.claimed, redeemed: row.redeemed, revoked: row.revoked };
}

function toPool(row: PoolRow): Pool {
  return {
    name: row.name,
    perClaimantLimit: row.per_claimant_limit,
    lowStockThreshold: row.low_stock_threshold,
    metadata: JSON.parse(row.metadata) as Record<string, unknown>,
    ...windowOf(row),
    ...limitsOf(row),
    publicCodes: row.public_codes === 1,
    codeFormat: row.code_format === null ? null : (JSON.parse(row.code_format) as CodeFormat),
    createdAt: row.created_at,
    stats: toStats(row),
  };
}

function toCode(pool: string, row: CodeRow): CodeInfo {
  return { pool, code: row.code, status: row.status, claimant: row.claimant, claimedAt: row.claimed_at, redeemedAt: row.redeemed_at, orderId: row.redeemed_order };
}
