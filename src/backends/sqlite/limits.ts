/**
 * SQLite rate limits: each admission is one BEGIN IMMEDIATE transaction (group-committed like every
 * write, see database.ts) that reads SQLite's clock and the key's state and runs the decision of
 * core/limits/rules.ts — so two processes on the file never both get the last unit.
 */
import type { LimitBackend } from '../../core/limits/backend.js';
import { limitExists, limitNotFound } from '../../core/limits/errors.js';
import { decide } from '../../core/limits/rules.js';
import type { LimitDecision, LimitDefinition, LimitPlan, LimitState } from '../../core/limits/types.js';
import { loadQueries } from '../shared/sql-files.js';
import { prepareAll, read, write, type Db, type SqliteOptions } from './database.js';

const Q = loadQueries(new URL('./limits.sql', import.meta.url), [
  'nowMs',
  'insertDef',
  'updateDef',
  'getDef',
  'listDefs',
  'deleteDef',
  'deleteStates',
  'getState',
  'putState',
  'deleteState',
  'sweepIdle',
]);

/** One in this many admissions also sweeps a few idle states. */
const SWEEP_EVERY = 256;

export class SqliteLimits implements LimitBackend {
  private readonly s;
  private writes = 0;

  constructor(
    private readonly db: Db,
    private readonly options: SqliteOptions,
  ) {
    this.s = prepareAll(db, Q);
  }

  create(def: LimitDefinition): Promise<LimitDefinition> {
    return write(this.db, this.options, () => {
      if (this.s.insertDef.run(def.name, JSON.stringify(def)).changes === 0) throw limitExists(def.name);
      return def;
    });
  }

  replace(def: LimitDefinition): Promise<LimitDefinition> {
    return write(this.db, this.options, () => {
      const row = this.s.getDef.get(def.name) as { definition: string } | undefined;
      if (!row) throw limitNotFound(def.name);
      const stored = { ...def, createdAt: (JSON.parse(row.definition) as LimitDefinition).createdAt };
      this.s.updateDef.run(JSON.stringify(stored), def.name);
      return stored;
    });
  }

  get(name: string): Promise<LimitDefinition | null> {
    return read(this.options, () => {
      const row = this.s.getDef.get(name) as { definition: string } | undefined;
      return row ? (JSON.parse(row.definition) as LimitDefinition) : null;
    });
  }

  list(): Promise<LimitDefinition[]> {
    return read(this.options, () =>
      (this.s.listDefs.all() as { definition: string }[]).map((r) => JSON.parse(r.definition) as LimitDefinition),
    );
  }

  remove(name: string): Promise<boolean> {
    return write(this.db, this.options, () => {
      this.s.deleteStates.run(name);
      return this.s.deleteDef.run(name).changes > 0;
    });
  }

  async take(plan: LimitPlan, key: string, n: number): Promise<LimitDecision> {
    // A refusal is decided on a plain read first (no write lock): a snapshot can only miss
    // admissions made since, so what it refuses, the current state refuses too.
    const refused = await read(this.options, () => {
      const { decision } = this.decide(plan, key, n);
      return decision.allowed ? null : decision;
    });
    if (refused) return refused;
    return write(this.db, this.options, () => {
      const { decision, next, now } = this.decide(plan, key, n);
      if (next) {
        this.s.putState.run(plan.name, key, JSON.stringify(next), next.last + plan.idleMs);
        if (++this.writes % SWEEP_EVERY === 0) this.s.sweepIdle.run(now);
      }
      return decision;
    });
  }

  peek(plan: LimitPlan, key: string, n: number): Promise<LimitDecision> {
    return read(this.options, () => this.decide(plan, key, n).decision);
  }

  private decide(plan: LimitPlan, key: string, n: number) {
    const { now } = this.s.nowMs.get() as { now: number };
    const row = this.s.getState.get(plan.name, key) as { state: string } | undefined;
    return { ...decide(plan, row ? (JSON.parse(row.state) as LimitState) : null, n, now), now };
  }

  async reset(plan: LimitPlan, key: string): Promise<void> {
    await write(this.db, this.options, () => this.s.deleteState.run(plan.name, key));
  }
}
