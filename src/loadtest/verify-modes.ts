/**
 * The checkers of the sale and lock modes, next to the pool checker in verify.ts and built the
 * same way: pure functions that RETURN every broken promise, so a crafted input shows they fail.
 *
 * Sale (flash sale buys):
 *   I1  no order acknowledged to two customers
 *   I2  nobody acknowledged more units than the per-customer limit; a retried key got its original order
 *   I3  sold ≤ cap and sold + held ≤ cap — the cap the sale has now AND the cap the run created it
 *       with (a store that quietly lifts its cap to sell more is overselling), also by the answers
 *   I5  the sale's sold counter equals the units of the acknowledged orders (nothing lost, nothing phantom)
 *   numbers  exactly min(demand, what the cap allows) units sold; sold_out only when it was true
 * Locks (acquire, hold, release):
 *   I6  on each key no two critical sections overlap, and fences grow with time
 *   numbers  every request answered, no lease left behind
 */
import type { AuditFinding, ClaimOutcome, LockFinalStats, RunViolation, SaleFinalStats } from './types.js';
import { Findings } from './verify.js';

export interface ModeSummary {
  winners: number;
  losers: number;
  given: number;
  soldOut: number;
  alreadyHeld: number;
  replayed: number;
  errors: Record<string, number>;
  demand: number;
  supply: number;
  expectedGiven: number;
}

export interface ModeVerification {
  ok: boolean;
  violations: RunViolation[];
  summary: ModeSummary;
}

function countErrors(outcomes: readonly ClaimOutcome[]): Record<string, number> {
  const errors: Record<string, number> = {};
  for (const o of outcomes)
    if (o.status === 'error') errors[o.error ?? 'unknown'] = (errors[o.error ?? 'unknown'] ?? 0) + 1;
  return errors;
}

export interface SaleExpectations {
  cap: number;
  qty: number;
  perCustomerLimit: number;
  requests: number;
  maxPerCheck?: number;
}

export function verifySaleRun(input: {
  outcomes: readonly ClaimOutcome[];
  final: SaleFinalStats;
  audit: readonly AuditFinding[];
  expect: SaleExpectations;
}): ModeVerification {
  const { outcomes, final, expect } = input;
  const found = new Findings(expect.maxPerCheck ?? 20);
  const errors = countErrors(outcomes);
  const unexpected = Object.keys(errors).filter((e) => e !== 'sold_out');
  if (unexpected.length > 0)
    found.add(
      'errors',
      `unexpected errors: ${JSON.stringify(errors)} (first: ${JSON.stringify(outcomes.find((o) => o.status === 'error' && o.error !== 'sold_out'))})`,
    );
  if (outcomes.length < expect.requests)
    found.add('numbers', `${outcomes.length} of ${expect.requests} requests were answered`);

  const orders = new Map<string, { customer: string; units: number }>();
  const unitsOf = new Map<string, number>();
  const byKey = new Map<string, string>();
  const requestsOf = new Map<string, Set<string>>();
  for (const o of outcomes) {
    const wanted = requestsOf.get(o.claimant) ?? new Set<string>();
    wanted.add(o.key ?? `click-${o.attempt}`);
    requestsOf.set(o.claimant, wanted);
    if (o.status !== 'claimed') continue;
    if (o.code === undefined || o.units === undefined) {
      found.add('answers', `an order answer for ${o.claimant} names no order or units`);
      continue;
    }
    const known = orders.get(o.code);
    if (known && known.customer !== o.claimant)
      found.add('I1', `I1: order ${o.code} was acknowledged to ${known.customer} and to ${o.claimant}`);
    if (!known) {
      orders.set(o.code, { customer: o.claimant, units: o.units });
      unitsOf.set(o.claimant, (unitsOf.get(o.claimant) ?? 0) + o.units);
    }
    if (o.key !== undefined) {
      const id = `${o.claimant}\u0000${o.key}`;
      const previous = byKey.get(id);
      if (previous !== undefined && previous !== o.code)
        found.add('I2', `I2: retry of key ${o.key} answered order ${o.code}, the original answer was ${previous}`);
      if (previous === undefined) byKey.set(id, o.code);
    }
  }
  for (const [customer, units] of unitsOf) {
    if (units > expect.perCustomerLimit)
      found.add('I2', `I2: ${customer} was acknowledged ${units} units, limit ${expect.perCustomerLimit}`);
  }
  const acknowledged = [...orders.values()].reduce((n, o) => n + o.units, 0);
  if (final.sold > final.cap) found.add('I3', `I3: sold ${final.sold} units of a cap of ${final.cap}`);
  if (final.sold + final.held > final.cap)
    found.add('I3', `I3: sold ${final.sold} + held ${final.held} exceeds the cap of ${final.cap}`);
  if (final.sold > expect.cap && final.sold <= final.cap)
    found.add(
      'I3',
      `I3: sold ${final.sold} units of a sale created with a cap of ${expect.cap} (its cap now says ${final.cap})`,
    );
  if (acknowledged > expect.cap)
    found.add('I3', `I3: ${acknowledged} units were acknowledged for a cap of ${expect.cap}`);
  if (final.sold < acknowledged)
    found.add('I5', `I5: ${acknowledged} units were acknowledged but the sale counts ${final.sold} sold`);
  if (final.sold > acknowledged && unexpected.length === 0)
    found.add('I5', `I5: the sale counts ${final.sold} sold but only ${acknowledged} units were acknowledged`);

  // Every buy is qty units, so a sale stops at the largest multiple of qty within the cap.
  const allowedRequests = Math.floor(expect.perCustomerLimit / expect.qty);
  let demand = 0;
  for (const wanted of requestsOf.values()) demand += Math.min(wanted.size, allowedRequests) * expect.qty;
  const sellable = Math.floor(expect.cap / expect.qty) * expect.qty;
  const expectedGiven = Math.min(demand, sellable);
  if (unexpected.length === 0 && final.sold !== expectedGiven)
    found.add(
      'numbers',
      `sold ${final.sold} units for demand ${demand} and cap ${expect.cap} (expected ${expectedGiven})`,
    );
  const soldOut = errors.sold_out ?? 0;
  if (soldOut > 0 && final.available >= expect.qty)
    found.add('numbers', `${soldOut} answers said sold_out while ${final.available} units were still available`);
  let losers = 0;
  for (const [customer] of requestsOf) {
    if (unitsOf.has(customer)) continue;
    losers++;
    // errors are reported once, under `errors`; an answer other than an error is a lie
    const other = outcomes.find((o) => o.claimant === customer && o.status !== 'error');
    if (other)
      found.add(
        'numbers',
        `${customer} bought nothing but was answered ${other.status}${other.code ? ` ${other.code}` : ''}`,
      );
  }
  for (const v of input.audit) found.add('audit', `audit${v.invariant ? ` ${v.invariant}` : ''}: ${v.message}`);
  const violations = found.close();
  return {
    ok: violations.length === 0,
    violations,
    summary: {
      winners: unitsOf.size,
      losers,
      given: final.sold,
      soldOut,
      alreadyHeld: outcomes.filter((o) => o.status === 'already-held').length,
      replayed: outcomes.filter((o) => o.replayed).length,
      errors,
      demand,
      supply: expect.cap,
      expectedGiven,
    },
  };
}

export interface LockExpectations {
  requests: number;
  maxPerCheck?: number;
}

export function verifyLockRun(input: {
  outcomes: readonly ClaimOutcome[];
  liveHolders: number;
  expect: LockExpectations;
}): ModeVerification & { final: LockFinalStats } {
  const { outcomes, expect } = input;
  const found = new Findings(expect.maxPerCheck ?? 20);
  const errors = countErrors(outcomes);
  if (Object.keys(errors).length > 0)
    found.add(
      'errors',
      `errors: ${JSON.stringify(errors)} (first: ${JSON.stringify(outcomes.find((o) => o.status === 'error'))})`,
    );
  if (outcomes.length < expect.requests)
    found.add('numbers', `${outcomes.length} of ${expect.requests} requests were answered`);
  if (input.liveHolders > 0)
    found.add('numbers', `${input.liveHolders} leases are still held after every holder released`);

  type Section = { key: string; start: number; end: number; fence: number; who: string };
  const sections: Section[] = [];
  for (const o of outcomes) {
    if (o.status !== 'claimed') continue;
    if (o.resource === undefined || o.fence === undefined || o.start === undefined || o.end === undefined) {
      found.add('answers', `a lease answer for ${o.claimant} lacks its key, fence or times`);
      continue;
    }
    sections.push({ key: o.resource, start: o.start, end: o.end, fence: o.fence, who: o.claimant });
  }
  let overlapMs = 0;
  const byKey = new Map<string, Section[]>();
  for (const s of sections) byKey.set(s.key, [...(byKey.get(s.key) ?? []), s]);
  for (const [key, list] of byKey) {
    list.sort((a, b) => a.start - b.start);
    for (let i = 1; i < list.length; i++) {
      const prev = list[i - 1]!;
      const cur = list[i]!;
      if (cur.start < prev.end) {
        overlapMs = Math.max(overlapMs, prev.end - cur.start);
        found.add(
          'I6',
          `I6: on ${key}, ${cur.who} (fence ${cur.fence}) entered ${(prev.end - cur.start).toFixed(3)} ms before ${prev.who} (fence ${prev.fence}) left`,
        );
      }
      if (cur.fence <= prev.fence)
        found.add(
          'I6',
          `I6: on ${key}, fence ${cur.fence} of ${cur.who} came after fence ${prev.fence} of ${prev.who}`,
        );
    }
  }
  // Parallelism across keys: sections that overlapped a section of another key.
  const ordered = [...sections].sort((a, b) => a.start - b.start);
  let crossKeyOverlaps = 0;
  let top: { end: number; key: string } | null = null;
  let second: { end: number; key: string } | null = null;
  for (const s of ordered) {
    const other = top && top.key !== s.key ? top : second;
    if (other && other.end > s.start) crossKeyOverlaps++;
    const entry = { end: s.end, key: s.key };
    if (!top || entry.end > top.end) {
      if (top && top.key !== entry.key) second = top;
      top = entry;
    } else if (entry.key !== top.key && (!second || entry.end > second.end)) second = entry;
  }
  const violations = found.close();
  return {
    ok: violations.length === 0,
    violations,
    final: {
      acquisitions: sections.length,
      overlapMs: Math.round(overlapMs * 1000) / 1000,
      crossKeyOverlaps,
      liveHolders: input.liveHolders,
    },
    summary: {
      winners: new Set(sections.map((s) => s.who)).size,
      losers: 0,
      given: sections.length,
      soldOut: 0,
      alreadyHeld: 0,
      replayed: 0,
      errors,
      demand: expect.requests,
      supply: expect.requests,
      expectedGiven: expect.requests,
    },
  };
}
