/**
 * The exactly-once checker. Given what every client was told (outcomes) and what the store
 * ends up holding (exported codes, counters, its own audit), it RETURNS every broken promise
 * instead of throwing, so the load tester can report them all and the test harness can turn
 * them into one assertion:
 *   I1  no code acknowledged to two claimants
 *   I2  nobody over the limit; a retried idempotency key answered with the original code
 *   I4  counters equal the ledger (the exported rows)
 *   I5  every acknowledged code is still held by the claimant it was given to
 *   numbers  exactly min(demand, supply) codes handed out, nobody told sold_out while codes
 *            stayed free, claimants left with nothing were told sold_out, every request answered
 *   audit    the backend's own audit is clean
 * Pure function: no I/O, so it can be fed crafted inputs and shown to fail.
 */
import type { Dibs } from '../core/dibs.js';
import type { PoolStats } from '../core/types.js';
import type { AuditFinding, CheckId, ClaimOutcome, CodeState, RunViolation } from './types.js';

export interface VerifyExpectations {
  /** Free codes when the run started (the supply). */
  codes: number;
  perClaimantLimit: number;
  /** Codes in the pool, when it is known exactly (a fresh pool: equal to `codes`). */
  total?: number;
  /** Requests that were sent; fewer answers than this is a violation. */
  requests?: number;
  /** Error codes tolerated besides `sold_out` (e.g. `unavailable` in a fault-injection run). */
  allowedErrors?: string[];
  /**
   * With faults a claim can commit while its answer is lost, and killed clients never send part
   * of the demand: then held-but-unacknowledged codes and a short count are not violations.
   */
  allowUnacknowledged?: boolean;
  /** Codes already held before the run (an existing pool): they are not this run's answers. */
  heldBefore?: Iterable<string>;
  /** At most this many messages per check; the rest are counted in one closing message (default 20). */
  maxPerCheck?: number;
}

export interface VerifyInput {
  outcomes: readonly ClaimOutcome[];
  /** The final state of every code of the pool (the export). */
  codes: readonly CodeState[];
  stats: PoolStats;
  audit: readonly AuditFinding[];
  expect: VerifyExpectations;
}

export interface VerifySummary {
  outcomes: number;
  /** Claimants holding at least one code handed out in this run. */
  winners: number;
  /** Claimants of this run holding nothing at the end. */
  losers: number;
  /** Codes handed out in this run, according to the store. */
  codesGiven: number;
  soldOut: number;
  alreadyHeld: number;
  replayed: number;
  errors: Record<string, number>;
  /** Distinct requests per claimant (a retried key is one request), capped by the limit. */
  demand: number;
  supply: number;
  expectedCodesGiven: number;
}

export interface VerifyResult {
  ok: boolean;
  violations: RunViolation[];
  summary: VerifySummary;
}

/** Collects violations, keeping the report readable when a broken store breaks thousands. */
export class Findings {
  readonly list: RunViolation[] = [];
  private readonly counts = new Map<CheckId, number>();
  constructor(private readonly maxPerCheck: number) {}

  add(check: CheckId, message: string): void {
    const n = (this.counts.get(check) ?? 0) + 1;
    this.counts.set(check, n);
    if (n <= this.maxPerCheck) this.list.push({ check, message });
  }

  close(): RunViolation[] {
    for (const [check, n] of this.counts) {
      if (n > this.maxPerCheck)
        this.list.push({ check, message: `${check}: … and ${n - this.maxPerCheck} more ${check} violations` });
    }
    return this.list;
  }
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

export function verifyRun(input: VerifyInput): VerifyResult {
  const { outcomes, expect } = input;
  const found = new Findings(expect.maxPerCheck ?? 20);
  const allowed = new Set(['sold_out', ...(expect.allowedErrors ?? [])]);
  const before = new Set(expect.heldBefore ?? []);

  // 1. What the clients were told.
  const errors: Record<string, number> = {};
  const acknowledged = new Map<string, string>(); // code -> claimant
  const byClaimant = new Map<string, Set<string>>();
  const byKey = new Map<string, string>(); // claimant \0 key -> code of the claimed answer
  const answersOf = new Map<string, ClaimOutcome[]>();
  for (const o of outcomes) {
    const mine = answersOf.get(o.claimant) ?? [];
    mine.push(o);
    answersOf.set(o.claimant, mine);
    if (o.status === 'error') {
      const code = o.error ?? 'unknown';
      errors[code] = (errors[code] ?? 0) + 1;
      continue;
    }
    if (o.code === undefined) {
      found.add('answers', `a ${o.status} answer for ${o.claimant} names no code`);
      continue;
    }
    const held = o.held ?? [o.code];
    if (o.status === 'already-held' && !held.includes(o.code)) {
      found.add('answers', `already-held answer for ${o.claimant} names a code it does not hold (${o.code})`);
    }
    const codes = o.status === 'claimed' ? [o.code] : held;
    for (const code of codes) {
      const holder = acknowledged.get(code);
      if (holder !== undefined && holder !== o.claimant)
        found.add('I1', `I1: code ${code} was acknowledged to ${holder} and to ${o.claimant}`);
      else acknowledged.set(code, o.claimant);
      const set = byClaimant.get(o.claimant) ?? new Set<string>();
      set.add(code);
      byClaimant.set(o.claimant, set);
    }
    if (o.key !== undefined && o.status === 'claimed') {
      const id = `${o.claimant}\u0000${o.key}`;
      const previous = byKey.get(id);
      if (previous !== undefined && previous !== o.code)
        found.add('I2', `I2: retry of key ${o.key} answered ${o.code}, the original answer was ${previous}`);
      if (previous === undefined) byKey.set(id, o.code);
    }
  }
  const unexpected = Object.keys(errors).filter((e) => !allowed.has(e));
  if (unexpected.length > 0) {
    const first = outcomes.find((o) => o.status === 'error' && !allowed.has(o.error ?? 'unknown'));
    found.add('errors', `unexpected errors: ${JSON.stringify(errors)} (first: ${JSON.stringify(first)})`);
  }
  for (const [claimant, codes] of byClaimant) {
    if (codes.size > expect.perClaimantLimit)
      found.add('I2', `I2: ${claimant} was acknowledged ${codes.size} codes, limit ${expect.perClaimantLimit}`);
  }
  if (expect.requests !== undefined && outcomes.length < expect.requests && !expect.allowUnacknowledged) {
    found.add(
      'numbers',
      `${outcomes.length} of ${expect.requests} requests were answered; ${expect.requests - outcomes.length} got no answer at all`,
    );
  }

  // 2. What the store holds.
  const held = new Map<string, string>(); // code -> holder, every held code
  const ledger: PoolStats = { total: 0, free: 0, claimed: 0, redeemed: 0, revoked: 0 };
  for (const c of input.codes) {
    ledger.total++;
    ledger[c.status]++;
    if (c.claimant !== null && (c.status === 'claimed' || c.status === 'redeemed')) held.set(c.code, c.claimant);
  }
  for (const [code, claimant] of acknowledged) {
    const holder = held.get(code);
    if (holder !== claimant)
      found.add('I5', `I5: acknowledged code ${code} of ${claimant} is held by ${holder ?? 'nobody'} now`);
  }
  const given = new Map<string, string>(); // code -> holder, only codes handed out in this run
  for (const [code, claimant] of held) if (!before.has(code)) given.set(code, claimant);
  if (!expect.allowUnacknowledged) {
    for (const [code, claimant] of given) {
      if (acknowledged.get(code) !== claimant)
        found.add('I5', `I5: code ${code} is held by ${claimant} but no answer said so`);
    }
  }
  const heldPerClaimant = new Map<string, number>();
  for (const claimant of held.values()) heldPerClaimant.set(claimant, (heldPerClaimant.get(claimant) ?? 0) + 1);
  for (const [claimant, n] of heldPerClaimant) {
    if (n > expect.perClaimantLimit)
      found.add('I2', `I2: ${claimant} holds ${n} codes, limit ${expect.perClaimantLimit}`);
  }

  // 3. Counters against the ledger (I4).
  const { stats } = input;
  if (expect.total !== undefined && stats.total !== expect.total)
    found.add('I4', `I4: total counter is ${stats.total}, the pool was filled with ${expect.total} codes`);
  for (const field of ['total', 'free', 'claimed', 'redeemed', 'revoked'] as const) {
    if (stats[field] !== ledger[field])
      found.add('I4', `I4: ${field} counter is ${stats[field]} but the ledger has ${ledger[field]}`);
  }
  if (stats.free !== expect.codes - given.size && !expect.allowUnacknowledged) {
    found.add(
      'I4',
      `I4: free counter is ${stats.free}, expected ${expect.codes - given.size} (${expect.codes} free at the start, ${given.size} handed out)`,
    );
  }

  // 4. The numbers add up: exactly min(demand, supply) codes handed out.
  // Demand: distinct requests per claimant (a retried key is one request), capped by the limit.
  let demand = 0;
  for (const [, answers] of answersOf) {
    const wanted = new Set(answers.map((o) => o.key ?? `click-${o.attempt}`));
    demand += Math.min(wanted.size, expect.perClaimantLimit);
  }
  const expectedCodesGiven = Math.min(demand, expect.codes);
  const onlySoldOut = !Object.keys(errors).some((e) => e !== 'sold_out');
  if (!expect.allowUnacknowledged && onlySoldOut && given.size !== expectedCodesGiven) {
    found.add(
      'numbers',
      `handed out ${given.size} codes for demand ${demand} and supply ${expect.codes} (expected ${expectedCodesGiven})`,
    );
  }
  const soldOut = errors.sold_out ?? 0;
  if (!expect.allowUnacknowledged && soldOut > 0 && stats.free > 0) {
    found.add(
      'numbers',
      `sold_out: ${plural(soldOut, 'answer')} said sold_out while ${stats.free} codes were still free`,
    );
  }
  let losers = 0;
  for (const [claimant, answers] of answersOf) {
    if (heldPerClaimant.has(claimant)) continue;
    losers++;
    const other = answers.find((o) => !(o.status === 'error' && o.error === 'sold_out'));
    if (other && other.status !== 'error')
      found.add('numbers', `${claimant} holds nothing but was answered ${other.status} ${other.code ?? ''}`.trimEnd());
  }

  // 5. The store's own audit.
  for (const v of input.audit) found.add('audit', `audit${v.invariant ? ` ${v.invariant}` : ''}: ${v.message}`);

  const violations = found.close();
  const winners = new Set(given.values()).size;
  return {
    ok: violations.length === 0,
    violations,
    summary: {
      outcomes: outcomes.length,
      winners,
      losers,
      codesGiven: given.size,
      soldOut,
      alreadyHeld: outcomes.filter((o) => o.status === 'already-held').length,
      replayed: outcomes.filter((o) => o.replayed).length,
      errors,
      demand,
      supply: expect.codes,
      expectedCodesGiven,
    },
  };
}

/** Reads a pool's final state through the library (export, counters, audit) and verifies the outcomes against it. */
export async function verifyPool(
  dibs: Dibs,
  pool: string,
  outcomes: readonly ClaimOutcome[],
  expect: VerifyExpectations,
): Promise<VerifyResult> {
  const codes: CodeState[] = [];
  for await (const batch of dibs.pools.exportCodes(pool, { batchSize: 5000 })) {
    for (const c of batch) codes.push({ code: c.code, status: c.status, claimant: c.claimant });
  }
  const stats = await dibs.pools.stats(pool);
  const audit = await dibs.pools.audit(pool);
  return verifyRun({ outcomes, codes, stats, audit, expect });
}
