/**
 * The audit of a pool on the SQL stores (SQLite, PostgreSQL): both run the same audit queries
 * (pools.sql: holderMismatch, holdMismatch, …) in one read snapshot; this turns what they read
 * into the violations, so the two phrase every finding alike.
 */
import type { CodeStatus, PoolStats, Violation } from '../../core/types.js';
import { counterViolations, overLimitViolation } from './pool-rules.js';

/** What the audit queries answered, read in one snapshot. */
export interface SqlPoolAuditRows {
  perClaimantLimit: number;
  counters: PoolStats;
  /** countByStatus: codes per state (PostgreSQL answers counts as text). */
  byStatus: { status: CodeStatus; n: number | string }[];
  holderMismatch: { code: string; status: CodeStatus; claimant: string | null }[];
  holdMismatch: { code: string; status: CodeStatus; claimant: string | null; hold_claimant: string | null }[];
  multiUseMismatch: { code: string; uses: number; max_uses: number; recorded: number }[];
  multiUseOverClaimant: { code: string; claimant: string; n: number; per_claimant: number }[];
  keysWithForeignCodes: { key: string; claimant: string; code: string; holder: string | null }[];
  claimantsOverLimit: { claimant: string; n: number }[];
  /** Low-stock crossings the pool recorded, and low-stock events in the outbox. */
  lowStock: { crossings: number; events: number };
}

export function sqlPoolViolations(pool: string, r: SqlPoolAuditRows): Violation[] {
  const violations: Violation[] = [];
  for (const c of r.holderMismatch)
    violations.push({
      invariant: 'I1',
      pool,
      code: c.code,
      message: `code '${c.code}' is ${c.status} but its holder is ${c.claimant === null ? 'missing' : `'${c.claimant}'`}`,
    });
  for (const c of r.holdMismatch)
    violations.push({
      invariant: 'I1',
      pool,
      code: c.code,
      claimant: c.hold_claimant!,
      message: `code '${c.code}' is ${c.status}${c.claimant ? ` by '${c.claimant}'` : ''} but held for checkout by '${c.hold_claimant}'`,
    });
  for (const m of r.multiUseMismatch)
    violations.push({
      invariant: 'I4',
      pool,
      code: m.code,
      expected: m.recorded,
      actual: m.uses,
      message: `multi-use code '${m.code}' counts ${m.uses} uses (of ${m.max_uses}) but ${m.recorded} are recorded`,
    });
  for (const u of r.multiUseOverClaimant)
    violations.push({
      invariant: 'I2',
      pool,
      code: u.code,
      claimant: u.claimant,
      expected: u.per_claimant,
      actual: u.n,
      message: `claimant '${u.claimant}' used multi-use code '${u.code}' ${u.n} times, limit is ${u.per_claimant}`,
    });
  for (const k of r.keysWithForeignCodes)
    violations.push({
      invariant: 'I2',
      pool,
      code: k.code,
      claimant: k.claimant,
      message: `idempotency key '${k.key}' of '${k.claimant}' points at code '${k.code}' held by ${k.holder === null ? 'nobody' : `'${k.holder}'`}`,
    });
  for (const c of r.claimantsOverLimit) violations.push(overLimitViolation(pool, c.claimant, c.n, r.perClaimantLimit));
  const ledger: PoolStats = { total: 0, free: 0, claimed: 0, redeemed: 0, revoked: 0 };
  for (const { status, n } of r.byStatus) {
    ledger[status] = Number(n);
    ledger.total += Number(n);
  }
  violations.push(...counterViolations(pool, r.counters, ledger));
  const { crossings, events } = r.lowStock;
  if (events !== crossings)
    violations.push({
      invariant: 'I7',
      pool,
      expected: crossings,
      actual: events,
      message: `${crossings} low-stock crossings were recorded but the outbox holds ${events} low-stock events`,
    });
  return violations;
}
