/**
 * The store side of rate limits. Optional member `limits?` of `Backend`. Inputs arrive
 * validated. `take` decides in ONE atomic step by the STORE's clock (SQLite: julianday('now') in
 * the transaction; PostgreSQL: clock_timestamp() after the key's row lock; Redis: TIME in one
 * script on the key's slot; Firestore: the read time of a guarded commit), following rules.ts.
 */
import type { LimitDecision, LimitDefinition, LimitPlan } from './types.js';

export interface LimitBackend {
  /** Stores a new definition; `already_exists` if the name is taken. */
  create(def: LimitDefinition): Promise<LimitDefinition>;
  /** Replaces a definition (createdAt kept); `not_found` if absent. */
  replace(def: LimitDefinition): Promise<LimitDefinition>;
  get(name: string): Promise<LimitDefinition | null>;
  list(): Promise<LimitDefinition[]>;
  /** Deletes the definition and (where the store can find them) its keys' state. False if absent. */
  remove(name: string): Promise<boolean>;
  /** One admission decision for `key` under `plan` (n ≤ the plan's most at once). */
  take(plan: LimitPlan, key: string, n: number): Promise<LimitDecision>;
  /**
   * What a take of `n` would answer now, by the store's clock, WITHOUT taking (nothing written).
   * Optional: stores without it answer `unsupported`.
   */
  peek?(plan: LimitPlan, key: string, n: number): Promise<LimitDecision>;
  /** Forgets the state of one key (its next take starts full). */
  reset(plan: LimitPlan, key: string): Promise<void>;
}
