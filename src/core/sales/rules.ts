/**
 * Pure sale rules shared by every backend: the preflight validator and the status a sale is in.
 * Backends call them inside their atomic step with state read in that step (the backend's clock,
 * overlapping sales, units sold), so the checks and the write cannot drift apart.
 */
import { DibsError } from '../errors.js';
import type { SaleViolation } from './backend.js';
import type { SaleSpec, SaleStatus } from './types.js';

/** Notification channels, in the order a wishlister's events are written. */
export const CHANNELS = ['email', 'webPush', 'webhook'] as const;

/** How far in the past a new sale may start and still count as "starting now" (request latency, clock skew). */
export const START_GRACE_MS = 60_000;

export interface Problem {
  field: string;
  message: string;
}

export interface PreflightContext {
  /** The backend's clock, ISO 8601. */
  now: string;
  /** Other non-cancelled sales of the same SKU (id, window). */
  sameSku: { id: string; startsAt: string; endsAt: string }[];
  /** Units already sold plus held (0 for a new sale). */
  committed: number;
  /** For an update: the sale as stored (its start may not move once it has started). */
  existing?: { startsAt: string };
}

/** Every problem with a sale definition, each naming its field. Empty = valid. */
export function preflight(spec: SaleSpec, context: PreflightContext): Problem[] {
  const problems: Problem[] = [];
  const now = Date.parse(context.now);
  const starts = Date.parse(spec.startsAt);
  const ends = Date.parse(spec.endsAt);
  if (ends <= starts) problems.push({ field: 'endsAt', message: `must be after startsAt (${spec.startsAt})` });
  if (ends <= now) problems.push({ field: 'endsAt', message: `must be in the future (now is ${context.now})` });
  if (!context.existing && starts < now - START_GRACE_MS)
    problems.push({ field: 'startsAt', message: `must be now or in the future (now is ${context.now})` });
  if (context.existing && context.existing.startsAt !== spec.startsAt && Date.parse(context.existing.startsAt) <= now) {
    problems.push({ field: 'startsAt', message: 'cannot move: the sale has already started' });
  }
  if (spec.cap !== null && spec.cap > 0 && spec.perCustomerLimit > spec.cap) {
    problems.push({ field: 'perCustomerLimit', message: `must not exceed cap (${spec.cap})` });
  }
  if (spec.cap !== null && spec.cap < context.committed) {
    problems.push({ field: 'cap', message: `cannot go below the ${context.committed} units already sold or held` });
  }
  for (const other of context.sameSku) {
    if (other.id !== spec.id && Date.parse(other.startsAt) < ends && starts < Date.parse(other.endsAt)) {
      problems.push({
        field: 'sku',
        message: `sale '${other.id}' sells ${spec.sku} in an overlapping window (${other.startsAt} – ${other.endsAt})`,
      });
    }
  }
  return problems;
}

export function assertPreflight(spec: SaleSpec, context: PreflightContext): void {
  const problems = preflight(spec, context);
  if (problems.length === 0) return;
  const first = problems[0]!;
  const more = problems.length > 1 ? ` (and ${problems.length - 1} more problem${problems.length > 2 ? 's' : ''})` : '';
  throw new DibsError('invalid_input', `${first.field}: ${first.message}${more}`, {
    field: first.field,
    details: { problems },
  });
}

export function saleStatus(
  sale: { startsAt: string; endsAt: string; cancelledAt: string | null; cap: number | null; sold: number },
  now: string,
): SaleStatus {
  if (sale.cancelledAt !== null) return 'cancelled';
  if (now < sale.startsAt) return 'scheduled';
  if (now >= sale.endsAt) return 'ended';
  if (sale.cap !== null && sale.sold >= sale.cap) return 'sold_out';
  return 'live';
}

/** Timestamps are stored and compared as fixed-width UTC ISO strings (`…T09:00:00.000Z`). */
export function normaliseTimestamp(value: string): string {
  return new Date(value).toISOString();
}

/**
 * I7 for `sale.sold_out`: it is recorded once per sale, in the step where sold first reaches the cap
 * (a last order, or a cap lowered to exactly what is sold). A cap raised afterwards does not unsay it:
 * at or above the cap the event must be there once; below it, once or not at all. Null when right.
 */
export function soldOutEventViolation(
  saleId: string,
  cap: number | null,
  sold: number,
  events: number,
): SaleViolation | null {
  const atCap = cap !== null && cap > 0 && sold >= cap;
  if (atCap ? events === 1 : events <= 1) return null;
  const expected = atCap ? 1 : '0 or 1';
  return {
    invariant: 'I7',
    sale: saleId,
    expected,
    actual: events,
    message: `expected ${expected} sale.sold_out event(s), found ${events}`,
  };
}

/**
 * The audit's judgement of a sale's counters against its ledger, read in one snapshot: the sold
 * and held counters equal the orders and active holds (I4), and orders plus the holds that have
 * not lapsed stay within the cap (I3).
 */
export function ledgerViolations(
  saleId: string,
  counters: { sold: number; held: number; cap: number | null },
  ledger: { ordered: number; active: number; live: number },
): SaleViolation[] {
  const violations: SaleViolation[] = [];
  const { sold, held, cap } = counters;
  if (ledger.ordered !== sold)
    violations.push({
      invariant: 'I4',
      sale: saleId,
      expected: ledger.ordered,
      actual: sold,
      message: `sold counter says ${sold} but orders hold ${ledger.ordered} units`,
    });
  if (ledger.active !== held)
    violations.push({
      invariant: 'I4',
      sale: saleId,
      expected: ledger.active,
      actual: held,
      message: `held counter says ${held} but active holds have ${ledger.active} units`,
    });
  if (cap !== null && ledger.ordered + ledger.live > cap)
    violations.push({
      invariant: 'I3',
      sale: saleId,
      expected: cap,
      actual: ledger.ordered + ledger.live,
      message: `sold ${ledger.ordered} + held ${ledger.live} exceeds the cap of ${cap}`,
    });
  return violations;
}

/** The audit's I2 finding for each customer found over the sale's per-customer limit. */
export function overLimitViolations(
  saleId: string,
  limit: number,
  over: readonly { customer: string; units: number }[],
): SaleViolation[] {
  return over.map((c) => ({
    invariant: 'I2',
    sale: saleId,
    customer: c.customer,
    expected: limit,
    actual: c.units,
    message: `customer '${c.customer}' has ${c.units} units, limit ${limit}`,
  }));
}
