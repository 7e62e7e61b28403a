/**
 * The decision of a rate limit, written once. SQLite and Firestore run `decide` inside their
 * atomic step (a BEGIN IMMEDIATE transaction; a guarded Firestore commit) with the store's clock;
 * PostgreSQL (migrations/018_limits.sql, limit_take) and Redis (scripts/limit_take.lua) are
 * line-by-line ports of it, and the conformance suite holds all four to the same answers.
 */
import type { LimitDecision, LimitDefinition, LimitPlan, LimitState } from './types.js';

/** The plan a store decides by; `shape` changes only when the meaning of the stored state does. */
export function planOf(def: LimitDefinition): LimitPlan {
  if (def.algorithm === 'token-bucket') {
    const intervalMs = def.periodMs / def.limit;
    return {
      kind: 'gcra',
      name: def.name,
      shape: `gcra:${def.periodMs}:${def.limit}:${def.burst}`,
      intervalMs,
      toleranceMs: def.burst * intervalMs,
      idleMs: Math.ceil(def.burst * intervalMs) + 1000,
    };
  }
  const span = def.algorithm === 'quota' ? 0 : def.segments;
  const widthMs = def.algorithm === 'quota' ? def.periodMs : def.periodMs / def.segments;
  return {
    kind: 'window',
    name: def.name,
    shape: `window:${widthMs}:${span}`,
    widthMs,
    span,
    limit: def.limit,
    idleMs: Math.ceil(widthMs * (span + 1)) + 1000,
  };
}

/** The most one take can ask for (more is never admitted). */
export const mostAtOnce = (def: LimitDefinition) => (def.algorithm === 'token-bucket' ? def.burst : def.limit);

const fresh = (plan: LimitPlan): LimitState => ({ shape: plan.shape, last: 0, tat: 0, base: 0, counts: [] });

/**
 * One decision at the store's clock `clockMs`. Returns the decision and the state to store, or
 * null when nothing changes (a denial writes nothing).
 */
export function decide(
  plan: LimitPlan,
  stored: LimitState | null,
  n: number,
  clockMs: number,
): { decision: LimitDecision; next: LimitState | null } {
  const state = stored && stored.shape === plan.shape ? stored : fresh(plan);
  // The store's clock as this key has seen it: never earlier than an admission already made.
  const now = Math.max(clockMs, state.last);
  if (plan.kind === 'gcra') {
    const tat = Math.max(state.tat, now);
    const newTat = tat + n * plan.intervalMs;
    const over = newTat - now - plan.toleranceMs;
    if (over > 0) {
      const remaining = Math.max(0, Math.floor((plan.toleranceMs - (tat - now)) / plan.intervalMs + 1e-9));
      return { decision: { allowed: false, retryAfterMs: Math.ceil(over), remaining, at: now }, next: null };
    }
    const remaining = Math.floor((plan.toleranceMs - (newTat - now)) / plan.intervalMs + 1e-9);
    return {
      decision: { allowed: true, remaining, at: now },
      next: { shape: plan.shape, last: now, tat: newTat, base: 0, counts: [] },
    };
  }
  const bucket = Math.floor(now / plan.widthMs);
  const first = bucket - plan.span;
  // counts[i] belongs to bucket first + i; buckets older than `first` no longer count
  const counts = Array.from({ length: plan.span + 1 }, (_, i) => {
    const j = first + i - state.base;
    return j >= 0 && j < state.counts.length ? state.counts[j]! : 0;
  });
  const used = counts.reduce((a, b) => a + b, 0);
  if (used + n > plan.limit) {
    // the wait: until the oldest buckets holding `excess` units have left the window
    const excess = used + n - plan.limit;
    let freed = 0;
    let i = 0;
    for (; i < counts.length; i++) {
      freed += counts[i]!;
      if (freed >= excess) break;
    }
    const leavesAt = (first + i + plan.span + 1) * plan.widthMs;
    return {
      decision: {
        allowed: false,
        retryAfterMs: Math.max(1, Math.ceil(leavesAt - now)),
        remaining: Math.max(0, plan.limit - used),
        at: now,
      },
      next: null,
    };
  }
  counts[plan.span] = counts[plan.span]! + n;
  return {
    decision: { allowed: true, remaining: plan.limit - used - n, at: now },
    next: { shape: plan.shape, last: now, tat: 0, base: first, counts },
  };
}
