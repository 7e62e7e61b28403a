/**
 * Tiered mode: the durable ledger (SQLite or PostgreSQL) grants capacity of a capped sale to a
 * Redis fast path in chunks (escrow). This is the ledger's side of that contract; the fast path
 * is src/backends/tiered/. The ledger alone keeps `sold + held + escrow ≤ cap` (a CHECK on the
 * sale row), and a fast-path order is written only against an open grant that still has the
 * units — so nothing Redis does (stopping, losing its data, answering late) can oversell.
 */
import type { SaleViolation } from './backend.js';
import type { Order, SaleStatus } from './types.js';

export type GrantOutcome =
  /** A new grant of `size` units (≥ 1). */
  | { outcome: 'ok'; grantId: string; size: number; perCustomerLimit: number; endsAt: string }
  /** Nothing left to grant; `escrow` units are still granted (decided in Redis, writes in flight). */
  | { outcome: 'empty'; escrow: number; perCustomerLimit: number; endsAt: string }
  /** Not live now: the ledger path gives the exact answer. */
  | { outcome: 'not_live'; status: SaleStatus }
  /** Unlimited sales and sales behind a waiting room are sold by the ledger path only. */
  | { outcome: 'ledger_only' };

export type GrantedTake =
  | { outcome: 'ok' | 'replay'; order: Order }
  /** The grant is revoked or has no units left: serve this buyer by the ledger path. */
  | { outcome: 'revoked' };

export interface GrantLedger {
  /**
   * One step: expire stale holds, revoke the sale's expired grants (every open grant with
   * `revokeAll`, after Redis lost them; every open grant newer than `newest`, the newest grant the
   * fast path's state knows, after Redis rolled back), then grant up to `size` units of what is
   * neither sold, held nor granted. Throws `not_found`.
   */
  grant(saleId: string, size: number, ttlMs: number, revokeAll: boolean, newest?: string | null): Promise<GrantOutcome>;
  /**
   * A buy Redis decided: in one step, judge the key (replay / `conflict`), the window
   * (`not_live`), the waiting room (`ticket_required`), the per-customer limit (`limit_reached`) again, then consume `quantity` units
   * of the grant and write the order — or answer `revoked` when the grant cannot give them.
   */
  takeGranted(
    saleId: string,
    grantId: string,
    customer: string,
    quantity: number,
    key: string | null,
    orderId: string,
  ): Promise<GrantedTake>;
  /** Gives back up to `unused` units of a grant the fast path stopped selling from. → units returned */
  closeGrant(grantId: string, unused: number): Promise<number>;
  /**
   * Revokes every open grant of the sale (reconciliation), or with `newerThan` only those made
   * after that grant (orphaned: the fast path's state rolled back past them). → units returned
   */
  revokeGrants(saleId: string, newerThan?: string): Promise<number>;
  /** The units-sync job: revokes grants past their expiry across all sales. → units returned */
  expireGrants(limit: number): Promise<number>;
  /** An order by id, or null. */
  getOrder(orderId: string): Promise<Order | null>;
  /** Grant invariants: each grant's used = its orders' units, escrow = unused of open grants, sold + held + escrow ≤ cap, fast-path sold ≤ granted ≤ cap. */
  auditGrants(saleId: string): Promise<SaleViolation[]>;
}

/** Whether a SaleBackend also keeps a grant ledger (SQLite and PostgreSQL do). */
export function hasGrantLedger(sales: unknown): sales is GrantLedger {
  return typeof (sales as Partial<GrantLedger> | null)?.takeGranted === 'function';
}

/** What an audit reads in one snapshot (raw counters of the sale and sums over its grants and orders). */
export interface GrantAuditRow {
  cap: number | null;
  sold: number;
  held: number;
  escrow: number;
  open_unused: number;
  granted: number;
  fast_sold: number;
}

/** The grant invariants, the same for every ledger. */
export function grantViolations(
  sale: string,
  row: GrantAuditRow,
  misused: { id: string; used: number; ordered: number }[],
): SaleViolation[] {
  const violations: SaleViolation[] = [];
  if (row.escrow !== row.open_unused)
    violations.push({
      invariant: 'I4',
      sale,
      expected: row.open_unused,
      actual: row.escrow,
      message: `escrow counter says ${row.escrow} but open grants have ${row.open_unused} unused units`,
    });
  for (const g of misused)
    violations.push({
      invariant: 'I4',
      sale,
      expected: g.ordered,
      actual: g.used,
      message: `grant ${g.id} says ${g.used} units used but its orders hold ${g.ordered}`,
    });
  if (row.fast_sold > row.granted)
    violations.push({
      invariant: 'I3',
      sale,
      expected: row.granted,
      actual: row.fast_sold,
      message: `the fast path sold ${row.fast_sold} units but only ${row.granted} were granted`,
    });
  if (row.cap !== null) {
    if (row.granted > row.cap)
      violations.push({
        invariant: 'I3',
        sale,
        expected: row.cap,
        actual: row.granted,
        message: `${row.granted} units granted, over the cap of ${row.cap}`,
      });
    if (row.sold + row.held + row.escrow > row.cap)
      violations.push({
        invariant: 'I3',
        sale,
        expected: row.cap,
        actual: row.sold + row.held + row.escrow,
        message: `sold ${row.sold} + held ${row.held} + escrow ${row.escrow} exceeds the cap of ${row.cap}`,
      });
  }
  return violations;
}
