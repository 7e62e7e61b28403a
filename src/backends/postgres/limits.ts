/**
 * PostgreSQL rate limits: a take is one call of limit_take (functions/limit_take.sql), the port
 * of core/limits/rules.ts that decides under the key's row lock by the server's clock.
 */
import type pg from 'pg';
import type { LimitBackend } from '../../core/limits/backend.js';
import { limitExists, limitNotFound } from '../../core/limits/errors.js';
import type { LimitDecision, LimitDefinition, LimitPlan } from '../../core/limits/types.js';
import { loadQueries } from '../shared/sql-files.js';
import { query, queryPrepared } from './connection.js';

const Q = loadQueries(new URL('./limits.sql', import.meta.url), [
  'take',
  'peek',
  'insertDef',
  'replaceDef',
  'getDef',
  'listDefs',
  'deleteDef',
  'reset',
  'sweepIdle',
]);

/** One in this many admissions also sweeps a few idle states. */
const SWEEP_EVERY = 256;

interface TakeRow {
  allowed: boolean;
  remaining: string;
  retry_ms: string;
  at_ms: number;
}

export class PgLimits implements LimitBackend {
  private takes = 0;

  constructor(private readonly pool: pg.Pool) {}

  async create(def: LimitDefinition): Promise<LimitDefinition> {
    const { rows } = await query(this.pool, Q.insertDef, [def.name, def]);
    if (rows.length === 0) throw limitExists(def.name);
    return def;
  }

  async replace(def: LimitDefinition): Promise<LimitDefinition> {
    const { rows } = await query<{ definition: LimitDefinition }>(this.pool, Q.replaceDef, [def.name, def]);
    if (!rows[0]) throw limitNotFound(def.name);
    return rows[0].definition;
  }

  async get(name: string): Promise<LimitDefinition | null> {
    const { rows } = await queryPrepared<{ definition: LimitDefinition }>(this.pool, 'dibs_limit_get', Q.getDef, [
      name,
    ]);
    return rows[0]?.definition ?? null;
  }

  async list(): Promise<LimitDefinition[]> {
    const { rows } = await query<{ definition: LimitDefinition }>(this.pool, Q.listDefs, []);
    return rows.map((r) => r.definition);
  }

  async remove(name: string): Promise<boolean> {
    const { rows } = await query(this.pool, Q.deleteDef, [name]);
    return rows.length > 0;
  }

  async take(plan: LimitPlan, key: string, n: number): Promise<LimitDecision> {
    const args =
      plan.kind === 'gcra'
        ? [plan.name, key, plan.kind, plan.shape, plan.intervalMs, plan.toleranceMs, 1, 0, 0, plan.idleMs, n]
        : [plan.name, key, plan.kind, plan.shape, 1, 0, plan.widthMs, plan.span, plan.limit, plan.idleMs, n];
    const { rows } = await queryPrepared<TakeRow>(this.pool, 'dibs_limit_take', Q.take, args);
    const row = rows[0]!;
    if (row.allowed && ++this.takes % SWEEP_EVERY === 0) void query(this.pool, Q.sweepIdle, []).catch(() => {});
    return row.allowed
      ? { allowed: true, remaining: Number(row.remaining), at: row.at_ms }
      : { allowed: false, retryAfterMs: Number(row.retry_ms), remaining: Number(row.remaining), at: row.at_ms };
  }

  /** limit_decide on the stored state by the server's clock: no row lock, nothing written. */
  async peek(plan: LimitPlan, key: string, n: number): Promise<LimitDecision> {
    const args =
      plan.kind === 'gcra'
        ? [plan.name, key, plan.kind, plan.shape, plan.intervalMs, plan.toleranceMs, 1, 0, 0, n]
        : [plan.name, key, plan.kind, plan.shape, 1, 0, plan.widthMs, plan.span, plan.limit, n];
    const { rows } = await queryPrepared<TakeRow>(this.pool, 'dibs_limit_peek', Q.peek, args);
    const row = rows[0]!;
    return row.allowed
      ? { allowed: true, remaining: Number(row.remaining), at: row.at_ms }
      : { allowed: false, retryAfterMs: Number(row.retry_ms), remaining: Number(row.remaining), at: row.at_ms };
  }

  async reset(plan: LimitPlan, key: string): Promise<void> {
    await query(this.pool, Q.reset, [plan.name, key]);
  }
}
