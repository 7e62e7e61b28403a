/**
 * `dibs.limits`: validates input, keeps definitions, and asks the store for each decision.
 * The store decides every admission atomically by its own clock (backend.ts); this layer only
 * caches definitions briefly and sleeps out the exact wait the store computed in `waitFor`.
 */
import type { LimitBackend } from './backend.js';
import { limitNotFound, tooMany, waitAborted, waitTimedOut } from './errors.js';
import { mostAtOnce, planOf } from './rules.js';
import {
  limitInputSchema,
  limitNameSchema,
  limitUpdateSchema,
  takeCountSchema,
  takeOptionsSchema,
  waitOptionsSchema,
} from './schemas.js';
import type { LimitAllowed, LimitDecision, LimitDefinition, LimitInput, LimitPlan, LimitUpdate } from './types.js';
import { DibsError } from '../errors.js';
import { parseInput } from '../validate.js';

/**
 * How long this process decides by a definition it read before reading it again: an update
 * reaches every instance within this time.
 */
export const DEFINITION_CACHE_MS = 1000;

export class Limits {
  private readonly cache = new Map<string, { def: LimitDefinition; plan: LimitPlan; until: number }>();

  constructor(private readonly store: LimitBackend) {}

  async create(input: LimitInput): Promise<LimitDefinition> {
    const parsed = parseInput(limitInputSchema, input);
    const now = new Date().toISOString();
    const def = normalize({ ...parsed, createdAt: now, updatedAt: now });
    return this.remember(await this.store.create(def));
  }

  /** Changes some fields; a new algorithm or period restarts every key's count. */
  async update(name: string, changes: LimitUpdate): Promise<LimitDefinition> {
    const n = parseInput(limitNameSchema, name, 'name');
    const parsed = parseInput(limitUpdateSchema, changes);
    const current = await this.store.get(n);
    if (!current) throw limitNotFound(n);
    const algorithmChanged = parsed.algorithm !== undefined && parsed.algorithm !== current.algorithm;
    const merged = {
      ...current,
      ...parsed,
      // burst and segments belong to one algorithm: a switch takes the new one's defaults unless given
      // a burst left at its default (= limit) follows the limit
      burst: parsed.burst ?? (algorithmChanged || current.burst === current.limit ? undefined : current.burst),
      segments: parsed.segments ?? (algorithmChanged ? undefined : current.segments),
      updatedAt: new Date().toISOString(),
    };
    return this.remember(await this.store.replace(normalize(merged)));
  }

  async get(name: string): Promise<LimitDefinition> {
    const n = parseInput(limitNameSchema, name, 'name');
    const def = await this.store.get(n);
    if (!def) throw limitNotFound(n);
    return this.remember(def);
  }

  list(): Promise<LimitDefinition[]> {
    return this.store.list();
  }

  async delete(name: string): Promise<void> {
    const n = parseInput(limitNameSchema, name, 'name');
    this.cache.delete(n);
    if (!(await this.store.remove(n))) throw limitNotFound(n);
  }

  /** Takes `n` units for `key` now, or answers the exact wait. Never waits. */
  async take(name: string, n = 1, options: { key?: string } = {}): Promise<LimitDecision> {
    const limit = parseInput(limitNameSchema, name, 'name');
    const count = parseInput(takeCountSchema, n, 'n');
    const { key } = parseInput(takeOptionsSchema, options);
    const { def, plan } = await this.definition(limit);
    if (count > mostAtOnce(def)) throw tooMany(limit, count, mostAtOnce(def));
    return this.store.take(plan, key, count);
  }

  /**
   * Takes `n` units for `key`, sleeping until the store admits them. Each denial carries the exact
   * wait the store computed, so this sleeps once per contender that got in first — no polling.
   * `rate_limited` when `waitMs` passes or `signal` aborts.
   */
  async waitFor(
    name: string,
    n = 1,
    options: { key?: string; waitMs?: number; signal?: AbortSignal } = {},
  ): Promise<LimitAllowed> {
    const limit = parseInput(limitNameSchema, name, 'name');
    const count = parseInput(takeCountSchema, n, 'n');
    const { key, waitMs, signal } = parseInput(waitOptionsSchema, options);
    const deadline = Date.now() + waitMs;
    for (;;) {
      if (signal?.aborted) throw waitAborted(limit, key, signal.reason);
      const decision = await this.take(limit, count, { key });
      if (decision.allowed) return decision;
      const left = deadline - Date.now();
      if (decision.retryAfterMs > left) throw waitTimedOut(limit, key, waitMs, decision.retryAfterMs);
      await sleepUnless(decision.retryAfterMs, signal, () => waitAborted(limit, key, signal?.reason));
    }
  }

  /**
   * What `take(name, n, {key})` would answer now, by the store's clock, without taking anything:
   * the units left and, when `n` would be refused, the exact wait. `unsupported` on stores without it.
   */
  async peek(name: string, n = 1, options: { key?: string } = {}): Promise<LimitDecision> {
    const limit = parseInput(limitNameSchema, name, 'name');
    const count = parseInput(takeCountSchema, n, 'n');
    const { key } = parseInput(takeOptionsSchema, options);
    if (!this.store.peek) throw new DibsError('unsupported', "this store cannot read a limit's state without taking");
    const { def, plan } = await this.definition(limit);
    if (count > mostAtOnce(def)) throw tooMany(limit, count, mostAtOnce(def));
    return this.store.peek(plan, key, count);
  }

  /** Forgets `key`'s count: its next take starts from a full allowance. */
  async reset(name: string, options: { key?: string } = {}): Promise<void> {
    const limit = parseInput(limitNameSchema, name, 'name');
    const { key } = parseInput(takeOptionsSchema, options);
    const { plan } = await this.definition(limit);
    await this.store.reset(plan, key);
  }

  private async definition(name: string): Promise<{ def: LimitDefinition; plan: LimitPlan }> {
    const hit = this.cache.get(name);
    if (hit && hit.until > Date.now()) return hit;
    const def = await this.store.get(name);
    if (!def) {
      this.cache.delete(name);
      throw limitNotFound(name);
    }
    return this.remember(def) && this.cache.get(name)!;
  }

  private remember(def: LimitDefinition): LimitDefinition {
    this.cache.set(def.name, { def, plan: planOf(def), until: Date.now() + DEFINITION_CACHE_MS });
    return def;
  }
}

/** Defaults and the cross-field rules of a definition (one place). */
function normalize(
  input: Omit<LimitDefinition, 'burst' | 'segments'> & { burst?: number | undefined; segments?: number | undefined },
): LimitDefinition {
  const { algorithm, limit, periodMs, name } = input;
  const burst = algorithm === 'token-bucket' ? (input.burst ?? limit) : limit;
  // default: 10 buckets, or the most up to 10 that divide the period into whole milliseconds
  const segments = algorithm === 'sliding-window' ? (input.segments ?? defaultSegments(periodMs)) : 1;
  if (algorithm !== 'token-bucket' && input.burst !== undefined && input.burst !== limit) {
    throw new DibsError('invalid_input', `burst: only a token-bucket limit has a burst`, { field: 'burst' });
  }
  if (algorithm !== 'sliding-window' && input.segments !== undefined && input.segments !== 1) {
    throw new DibsError('invalid_input', `segments: only a sliding-window limit has segments`, { field: 'segments' });
  }
  if (periodMs % segments !== 0) {
    throw new DibsError(
      'invalid_input',
      `segments: periodMs (${periodMs}) must be a multiple of segments (${segments})`,
      { field: 'segments' },
    );
  }
  return { name, algorithm, limit, periodMs, burst, segments, createdAt: input.createdAt, updatedAt: input.updatedAt };
}

function defaultSegments(periodMs: number): number {
  for (let s = 10; s > 1; s--) if (periodMs % s === 0) return s;
  return 1;
}

function sleepUnless(ms: number, signal: AbortSignal | undefined, onAbort: () => DibsError): Promise<void> {
  return new Promise((resolve, reject) => {
    // an abort while the take was in flight has fired already: a listener added now never would
    if (signal?.aborted) {
      reject(onAbort());
      return;
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', abort);
      resolve();
    }, ms);
    const abort = () => {
      clearTimeout(timer);
      reject(onAbort());
    };
    signal?.addEventListener('abort', abort, { once: true });
  });
}
