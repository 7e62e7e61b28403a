/**
 * Redis rate limits: a take is one Lua script (scripts/limit_take.lua, the port of
 * core/limits/rules.ts) on the one key of its (limit, key) — one slot per limit key, so keys
 * spread over a Cluster — by the server's TIME. The state key expires once it no longer matters
 * (a full allowance again). Definitions are one hash (`{prefix}:limits`, name → JSON).
 */
import type { LimitBackend } from '../../core/limits/backend.js';
import { limitExists, limitNotFound } from '../../core/limits/errors.js';
import type { LimitDecision, LimitDefinition, LimitPlan } from '../../core/limits/types.js';
import { limitDefinitionsKey, limitStateKey } from './keys.js';
import { REPLAY_MS, replayKey, requestId } from './resend.js';
import { runScript, type RedisClient } from './scripts.js';

export class RedisLimits implements LimitBackend {
  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
  ) {}

  async create(def: LimitDefinition): Promise<LimitDefinition> {
    const added = await this.client.hsetnx(limitDefinitionsKey(this.prefix), def.name, JSON.stringify(def));
    if (added === 0) throw limitExists(def.name);
    return def;
  }

  async replace(def: LimitDefinition): Promise<LimitDefinition> {
    // compare-and-set on the stored JSON: a concurrent delete or replace is never overwritten blindly
    const key = limitDefinitionsKey(this.prefix);
    for (;;) {
      const raw = await this.client.hget(key, def.name);
      if (raw === null) throw limitNotFound(def.name);
      const stored = { ...def, createdAt: (JSON.parse(raw) as LimitDefinition).createdAt };
      const swapped = await this.client.eval(
        "if redis.call('HGET', KEYS[1], ARGV[1]) == ARGV[2] then redis.call('HSET', KEYS[1], ARGV[1], ARGV[3]) return 1 end return 0",
        1,
        key,
        def.name,
        raw,
        JSON.stringify(stored),
      );
      if (swapped === 1) return stored;
    }
  }

  async get(name: string): Promise<LimitDefinition | null> {
    const raw = await this.client.hget(limitDefinitionsKey(this.prefix), name);
    return raw === null ? null : (JSON.parse(raw) as LimitDefinition);
  }

  async list(): Promise<LimitDefinition[]> {
    const all = await this.client.hgetall(limitDefinitionsKey(this.prefix));
    return Object.values(all)
      .map((raw) => JSON.parse(raw) as LimitDefinition)
      .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  }

  /** The keys' states cannot be listed without a scan; each expires within one idle period. */
  async remove(name: string): Promise<boolean> {
    return (await this.client.hdel(limitDefinitionsKey(this.prefix), name)) > 0;
  }

  take(plan: LimitPlan, key: string, n: number): Promise<LimitDecision> {
    return this.decide(plan, key, n, false);
  }

  /** limit_take with its write switched off: the same decision, the same clock, nothing stored. */
  peek(plan: LimitPlan, key: string, n: number): Promise<LimitDecision> {
    return this.decide(plan, key, n, true);
  }

  private async decide(plan: LimitPlan, key: string, n: number, peek: boolean): Promise<LimitDecision> {
    const args =
      plan.kind === 'gcra'
        ? [plan.kind, plan.shape, plan.intervalMs, plan.toleranceMs, 1, 0, 0, plan.idleMs, n]
        : [plan.kind, plan.shape, 1, 0, plan.widthMs, plan.span, plan.limit, plan.idleMs, n];
    // a take remembers its reply under a request id, so a re-send answers it instead of taking twice
    args.push(peek ? 'peek' : REPLAY_MS);
    const state = limitStateKey(this.prefix, plan.name, key);
    const [allowed, remaining, retryMs, at] = (await runScript(
      this.client,
      'limit_take',
      peek ? [state] : [state, replayKey(state, requestId())],
      args.map(num),
    )) as [number, number, number, string];
    return allowed === 1
      ? { allowed: true, remaining: Number(remaining), at: Number(at) }
      : { allowed: false, retryAfterMs: Number(retryMs), remaining: Number(remaining), at: Number(at) };
  }

  async reset(plan: LimitPlan, key: string): Promise<void> {
    await this.client.del(limitStateKey(this.prefix, plan.name, key));
  }
}

/** Numbers as Lua reads them back exactly (shortest round-trip form). */
const num = (v: string | number) => (typeof v === 'number' ? String(v) : v);
