/**
 * Model-based test of coupon pools: fast-check generates command sequences (import, claim,
 * claimMany, release, redeem, unredeem, revoke, hold, releaseHold, limit / window / redemption-limit
 * / public changes), runs each against a real store through the public facade AND against an
 * in-memory reference model built on core/model/pools.ts, and requires the same answer (the
 * result, or the refusal's code and message) at every step and the same state at the end (every
 * code's status, holder, order and hold; the counters; a clean audit). Lua and plpgsql cannot call
 * the TypeScript judgements: this is how their rules are held to them.
 *
 * Which free code a claim takes is the store's choice (random start points): the model accepts any
 * code that is claimable in the model and then follows the store's pick. Windows lie in 2000 or
 * 2100. Holds last ten minutes — or, in the expiry runs, a fraction of a second (`short`), and an
 * `advance` command waits past them: then the store's clock decides that a hold is gone (the code
 * is claimable again, another claimant may hold or redeem it), and clock.ts keeps every step
 * plainly before or after each expiry.
 *
 * Seeded and shrinking: a failure prints the seed, the path and the shrunk command list; replay it
 * with DIBS_MODEL_SEED=<seed> DIBS_MODEL_PATH=<path>. DIBS_MODEL_RUNS (or FAULTS_LONG=1: ×10) runs more.
 */
import assert from 'node:assert/strict';
import fc from 'fast-check';
import type { Dibs } from '../../src/index.js';
import { notFound } from '../../src/core/errors.js';
import { attempt, judged, sameAnswer, tally, type Outcome } from './outcome.js';
import { advance, settle, type Expiry } from './clock.js';
import {
  judgeClaim,
  judgeClaimKey,
  judgeHold,
  judgeLimitChange,
  judgeRedeem,
  judgeRelease,
  judgeReleaseHold,
  judgeRevoke,
  judgeUnredeem,
  judgeUnuse,
  judgeUse,
  holdIsLive,
  type CodeState,
  type MultiUseState,
  type PoolRules,
} from '../../src/core/model/pools.js';
import { windowState } from '../../src/core/window.js';
import { refusal } from '../../src/core/refusals.js';
import type { CodeInfo, PoolStats } from '../../src/core/types.js';

const CLAIMANTS = ['ann', 'bob', 'cat'] as const;
const CODES = ['C0', 'C1', 'C2', 'C3', 'C4', 'C5'] as const;
/** Multi-use codes (addMultiUseCode); a step on a code may name either kind. */
const MULTI = ['M0', 'M1'] as const;
const KEYS = ['k1', 'k2', 'k3'] as const;
const ORDERS = ['o1', 'o2'] as const;
const HOLD_MS = 600_000;
/** Windows far from any clock the test runs under. */
const WINDOWS = {
  open: { startsAt: null, expiresAt: null },
  later: { startsAt: '2100-01-01T00:00:00.000Z', expiresAt: null },
  past: { startsAt: null, expiresAt: '2001-01-01T00:00:00.000Z' },
  bounded: { startsAt: '2000-01-01T00:00:00.000Z', expiresAt: '2100-01-01T00:00:00.000Z' },
} as const;

export type PoolCommand =
  | { op: 'import'; codes: string[] }
  | { op: 'claim'; claimant: string; count: number; many: boolean; key: string | null }
  | { op: 'release'; code: string; claimant: string | null }
  | { op: 'redeem'; code: string; claimant: string | null; orderId: string | null }
  | { op: 'unredeem'; code: string; orderId: string | null }
  | { op: 'revoke'; code: string }
  | { op: 'hold'; code: string; claimant: string; short: boolean }
  | { op: 'advance' }
  | { op: 'addMulti'; code: string; uses: number; usesPerClaimant: number | null }
  | { op: 'codeWindow'; code: string; window: 'open' | 'later' | 'past' }
  | { op: 'releaseHold'; code: string; claimant: string | null }
  | { op: 'limit'; perClaimantLimit: number }
  | { op: 'window'; window: keyof typeof WINDOWS }
  | { op: 'redemptions'; maxRedemptions: number | null; maxRedemptionsPerClaimant: number | null }
  | { op: 'public'; publicCodes: boolean };

export interface PoolScenario {
  /** Codes imported when the pool is created. */
  initial: string[];
  perClaimantLimit: number;
  publicCodes: boolean;
  commands: PoolCommand[];
}

const claimant = fc.constantFrom(...CLAIMANTS);
const code = fc.constantFrom(...CODES);
const anyCode = fc.constantFrom(...CODES, ...MULTI);
const maybe = <T>(arb: fc.Arbitrary<T>) => fc.option(arb, { nil: null, freq: 3 });

const commands = (expiry: boolean): fc.Arbitrary<PoolCommand> =>
  fc.oneof(
    {
      weight: 2,
      arbitrary: fc.record({
        op: fc.constant('import' as const),
        codes: fc.array(code, { minLength: 1, maxLength: 4 }),
      }),
    },
    {
      weight: 6,
      arbitrary: fc.record({
        op: fc.constant('claim' as const),
        claimant,
        count: fc.integer({ min: 1, max: 3 }),
        many: fc.boolean(),
        key: maybe(fc.constantFrom(...KEYS)),
      }),
    },
    { weight: 2, arbitrary: fc.record({ op: fc.constant('release' as const), code, claimant: maybe(claimant) }) },
    {
      weight: 4,
      arbitrary: fc.record({
        op: fc.constant('redeem' as const),
        code: anyCode,
        claimant: maybe(claimant),
        orderId: maybe(fc.constantFrom(...ORDERS)),
      }),
    },
    {
      weight: 2,
      arbitrary: fc.record({
        op: fc.constant('unredeem' as const),
        code: anyCode,
        orderId: maybe(fc.constantFrom(...ORDERS)),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant('addMulti' as const),
        code: fc.constantFrom(...MULTI, 'C0'),
        uses: fc.integer({ min: 1, max: 3 }),
        usesPerClaimant: fc.option(fc.integer({ min: 1, max: 2 }), { nil: null }),
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant('codeWindow' as const),
        code: anyCode,
        window: fc.constantFrom('open', 'later', 'past') as fc.Arbitrary<'open' | 'later' | 'past'>,
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('revoke' as const), code }) },
    {
      weight: expiry ? 4 : 2,
      arbitrary: fc.record({
        op: fc.constant('hold' as const),
        code: anyCode,
        claimant,
        short: expiry ? fc.boolean() : fc.constant(false),
      }),
    },
    ...(expiry ? [{ weight: 2, arbitrary: fc.constant({ op: 'advance' as const }) }] : []),
    { weight: 1, arbitrary: fc.record({ op: fc.constant('releaseHold' as const), code, claimant: maybe(claimant) }) },
    {
      weight: 1,
      arbitrary: fc.record({ op: fc.constant('limit' as const), perClaimantLimit: fc.integer({ min: 1, max: 3 }) }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant('window' as const),
        window: fc.constantFrom('open', 'later', 'past', 'bounded') as fc.Arbitrary<keyof typeof WINDOWS>,
      }),
    },
    {
      weight: 1,
      arbitrary: fc.record({
        op: fc.constant('redemptions' as const),
        maxRedemptions: maybe(fc.integer({ min: 1, max: 3 })),
        maxRedemptionsPerClaimant: maybe(fc.integer({ min: 1, max: 2 })),
      }),
    },
    { weight: 1, arbitrary: fc.record({ op: fc.constant('public' as const), publicCodes: fc.boolean() }) },
  );

export const scenarios = (maxCommands: number, expiry = false): fc.Arbitrary<PoolScenario> =>
  fc.record({
    initial: fc.subarray([...CODES], { minLength: 1 }),
    perClaimantLimit: fc.integer({ min: 1, max: 3 }),
    publicCodes: fc.boolean(),
    commands: fc.array(commands(expiry), { minLength: 1, maxLength: maxCommands, size: 'max' }),
  });

interface ModelCode extends CodeState {
  key: string | null;
}

/** The reference model of one pool: its rules, its codes in import order, its live idempotency keys. */
interface ModelMulti extends MultiUseState {
  /** Uses by order: the claimant named (null: none). */
  orders: Map<string, string | null>;
}

class PoolModel {
  readonly codes = new Map<string, ModelCode>();
  readonly multis = new Map<string, ModelMulti>();
  readonly keys = new Map<string, { claimant: string; count: number }>();
  constructor(readonly rules: PoolRules) {}

  held(who: string): ModelCode[] {
    return [...this.codes.values()].filter(
      (c) => c.claimant === who && (c.status === 'claimed' || c.status === 'redeemed'),
    );
  }

  code(value: string): ModelCode {
    const c = this.codes.get(value);
    if (!c) throw notFound('code', value);
    return c;
  }

  /** Every hold's end, as the store answered it (ms). */
  *expiries(): Iterable<number> {
    for (const c of this.codes.values()) if (c.hold) yield Date.parse(c.hold.until);
  }

  stats(): PoolStats {
    const stats: PoolStats = { total: this.codes.size, free: 0, claimed: 0, redeemed: 0, revoked: 0 };
    for (const c of this.codes.values()) stats[c.status] += 1;
    return stats;
  }
}

/** What is compared of a code answer. */
const codeView = (c: Pick<CodeInfo, 'status' | 'claimant' | 'orderId'> & { hold?: { claimant: string } | null }) => ({
  status: c.status,
  claimant: c.claimant,
  orderId: c.orderId,
  hold: c.hold?.claimant ?? null,
});
const modelView = (c: ModelCode, now: string) => ({
  status: c.status,
  claimant: c.claimant,
  orderId: c.order,
  hold: holdIsLive(c, now) ? c.hold!.claimant : null,
});

const sameRefusal = (what: string, store: Outcome, model: Outcome) => sameAnswer(what, store, model);

/** Runs one scenario on a fresh pool of `dibs`; throws (an assertion) at the first disagreement. */
export async function runPoolScenario(
  dibs: Dibs,
  name: string,
  scenario: PoolScenario,
  expiry: Expiry = { ttlMs: HOLD_MS, marginMs: 0 },
): Promise<void> {
  await dibs.pools.create({ name, perClaimantLimit: scenario.perClaimantLimit, publicCodes: scenario.publicCodes });
  const model = new PoolModel({
    name,
    perClaimantLimit: scenario.perClaimantLimit,
    publicCodes: scenario.publicCodes,
    startsAt: null,
    expiresAt: null,
    maxRedemptions: null,
    maxRedemptionsPerClaimant: null,
  });
  for (const [i, cmd] of [{ op: 'import' as const, codes: scenario.initial }, ...scenario.commands].entries()) {
    const what = `step ${i} ${JSON.stringify(cmd)}`;
    const now = await settle(() => model.expiries(), expiry);
    if (cmd.op === 'advance') await advance(() => model.expiries(), expiry);
    else await step(dibs, model, cmd, now, what, expiry);
  }
  const now = await settle(() => model.expiries(), expiry);
  for (const c of model.codes.values())
    assert.deepEqual(codeView(await dibs.pools.code(name, c.code)), modelView(c, now), `final state of code ${c.code}`);
  for (const u of model.multis.values())
    assert.equal((await dibs.pools.code(name, u.code)).uses?.used, u.uses, `final uses of multi-use code ${u.code}`);
  assert.deepEqual(await dibs.pools.stats(name), model.stats(), 'final counters');
  for (const who of CLAIMANTS) {
    assert.deepEqual(
      (await dibs.pools.holdings(name, who)).map((c) => c.code).sort(),
      model
        .held(who)
        .map((c) => c.code)
        .sort(),
      `final holdings of ${who}`,
    );
  }
  assert.deepEqual(await dibs.pools.audit(name), [], 'the audit finds the pool clean');
}

async function step(
  dibs: Dibs,
  m: PoolModel,
  cmd: Exclude<PoolCommand, { op: 'advance' }>,
  now: string,
  what: string,
  expiry: Expiry,
): Promise<void> {
  const pool = m.rules.name;
  switch (cmd.op) {
    case 'import': {
      const got = await dibs.pools.importCodes(pool, cmd.codes);
      const fresh = [...new Set(cmd.codes)].filter((c) => !m.codes.has(c));
      for (const c of fresh)
        m.codes.set(c, {
          code: c,
          status: 'free',
          claimant: null,
          redeemedAt: null,
          order: null,
          hold: null,
          startsAt: null,
          expiresAt: null,
          key: null,
        });
      assert.deepEqual(
        { imported: got.imported, duplicates: got.duplicates },
        { imported: fresh.length, duplicates: cmd.codes.length - fresh.length },
        what,
      );
      return;
    }
    case 'claim': {
      const count = cmd.many ? cmd.count : 1;
      const options = cmd.key === null ? {} : { idempotencyKey: cmd.key };
      const store = await attempt(async () => {
        if (cmd.many) return dibs.pools.claimMany(pool, cmd.claimant, count, options);
        const r = await dibs.pools.claim(pool, cmd.claimant, options);
        return { status: r.status, codes: r.status === 'claimed' ? [r.code] : [], held: r.held, replayed: r.replayed };
      });
      const plan = judged(() => planClaim(m, cmd.claimant, count, cmd.key, now));
      sameRefusal(what, store, plan);
      if (!store.ok || !plan.ok) return;
      const got = store.value as { status: string; codes: string[]; held: string[]; replayed: boolean };
      const want = plan.value as ClaimPlan;
      assert.equal(got.status, want.status, `${what}: status`);
      assert.equal(got.replayed, want.replayed, `${what}: replayed`);
      if (want.replayed) assert.deepEqual([...got.codes].sort(), [...want.codes].sort(), `${what}: replayed codes`);
      else {
        assert.equal(got.codes.length, want.take, `${what}: how many codes`);
        for (const c of got.codes)
          assert.ok(
            want.claimable.includes(c),
            `${what}: the store handed out ${c}, which the model holds unclaimable (claimable: ${want.claimable.join(',')})`,
          );
        assert.equal(new Set(got.codes).size, got.codes.length, `${what}: a code twice in one answer`);
        for (const c of got.codes)
          Object.assign(m.code(c), {
            status: 'claimed',
            claimant: cmd.claimant,
            key: cmd.key,
            order: null,
            redeemedAt: null,
          });
        if (cmd.key !== null && got.codes.length > 0) m.keys.set(cmd.key, { claimant: cmd.claimant, count });
      }
      assert.deepEqual(
        [...got.held].sort(),
        m
          .held(cmd.claimant)
          .map((c) => c.code)
          .sort(),
        `${what}: held`,
      );
      return;
    }
    case 'release': {
      const store = await attempt(() =>
        dibs.pools.release(pool, cmd.code, cmd.claimant === null ? {} : { claimant: cmd.claimant }),
      );
      const model = judged(() => judgeRelease(m.code(cmd.code), cmd.claimant));
      sameRefusal(what, store, model);
      if (!model.ok) return;
      Object.assign(m.code(cmd.code), {
        status: 'free',
        claimant: null,
        key: null,
        order: null,
        redeemedAt: null,
        hold: null,
      });
      break;
    }
    case 'redeem': {
      const multi = m.multis.get(cmd.code);
      if (multi) {
        const store = await attempt(() =>
          dibs.pools.redeem(pool, cmd.code, {
            ...(cmd.claimant === null ? {} : { claimant: cmd.claimant }),
            ...(cmd.orderId === null ? {} : { orderId: cmd.orderId }),
          }),
        );
        const model = judged(() => {
          const prior = cmd.orderId === null ? undefined : multi.orders.get(cmd.orderId);
          return judgeUse(m.rules, multi, {
            claimant: cmd.claimant,
            orderId: cmd.orderId,
            now,
            prior: prior === undefined ? null : { claimant: prior },
            usesBy: (who) => [...multi.orders.values()].filter((c) => c === who).length,
          });
        });
        sameRefusal(what, store, model);
        if (model.ok && model.value === 'use') {
          multi.uses += 1;
          multi.orders.set(cmd.orderId!, cmd.claimant);
        }
        return;
      }
      const store = await attempt(() =>
        dibs.pools.redeem(pool, cmd.code, {
          ...(cmd.claimant === null ? {} : { claimant: cmd.claimant }),
          ...(cmd.orderId === null ? {} : { orderId: cmd.orderId }),
        }),
      );
      const model = judged(() => {
        const c = m.code(cmd.code);
        return judgeRedeem(m.rules, c, {
          claimant: cmd.claimant,
          orderId: cmd.orderId,
          now,
          heldBy: (who) => m.held(who).length,
          redeemed: (holder) => ({
            pool: m.stats().redeemed,
            claimant: m.held(holder).filter((h) => h.status === 'redeemed').length,
          }),
        });
      });
      sameRefusal(what, store, model);
      if (!model.ok || !store.ok) return;
      const j = model.value as ReturnType<typeof judgeRedeem>;
      if (j.kind === 'redeem') {
        const c = m.code(cmd.code);
        Object.assign(c, {
          status: 'redeemed',
          claimant: j.holder,
          order: cmd.orderId,
          redeemedAt: (store.value as CodeInfo).redeemedAt,
          hold: null,
          key: j.direct ? null : c.key,
        });
      }
      break;
    }
    case 'unredeem': {
      const multi = m.multis.get(cmd.code);
      if (multi) {
        const store = await attempt(() =>
          dibs.pools.unredeem(pool, cmd.code, cmd.orderId === null ? {} : { orderId: cmd.orderId }),
        );
        const model = judged(() =>
          judgeUnuse(cmd.code, cmd.orderId, cmd.orderId !== null && multi.orders.has(cmd.orderId) ? true : null),
        );
        sameRefusal(what, store, model);
        if (model.ok) {
          multi.uses -= 1;
          multi.orders.delete(cmd.orderId!);
        }
        return;
      }
      const store = await attempt(() =>
        dibs.pools.unredeem(pool, cmd.code, cmd.orderId === null ? {} : { orderId: cmd.orderId }),
      );
      const model = judged(() => judgeUnredeem(m.code(cmd.code), cmd.orderId));
      sameRefusal(what, store, model);
      if (!model.ok) return;
      Object.assign(m.code(cmd.code), { status: 'claimed', order: null, redeemedAt: null });
      break;
    }
    case 'revoke': {
      const store = await attempt(() => dibs.pools.revoke(pool, cmd.code));
      const model = judged(() => judgeRevoke(m.code(cmd.code)));
      sameRefusal(what, store, model);
      if (!model.ok) return;
      Object.assign(m.code(cmd.code), {
        status: 'revoked',
        claimant: null,
        key: null,
        order: null,
        redeemedAt: null,
        hold: null,
      });
      break;
    }
    case 'hold': {
      // a short hold is under the facade's 1 s minimum: the store's own step, with the same input
      const store = await attempt(() =>
        cmd.short
          ? dibs.backend.pools.hold(pool, cmd.code, cmd.claimant, expiry.ttlMs)
          : dibs.pools.hold(pool, cmd.code, cmd.claimant, HOLD_MS),
      );
      const model = judged(() =>
        m.multis.has(cmd.code)
          ? (() => {
              throw refusal('multi_use_not_holdable', { code: cmd.code });
            })()
          : judgeHold(m.rules, m.code(cmd.code), cmd.claimant, now, (who) => m.held(who).length),
      );
      sameRefusal(what, store, model);
      if (!model.ok || !store.ok) return;
      m.code(cmd.code).hold = { claimant: cmd.claimant, until: (store.value as CodeInfo).hold!.expiresAt };
      break;
    }
    case 'releaseHold': {
      const store = await attempt(() =>
        dibs.pools.releaseHold(pool, cmd.code, cmd.claimant === null ? {} : { claimant: cmd.claimant }),
      );
      const model = judged(() => judgeReleaseHold(m.code(cmd.code), cmd.claimant, now));
      sameRefusal(what, store, model);
      if (model.ok && model.value === 'drop') m.code(cmd.code).hold = null;
      break;
    }
    case 'addMulti': {
      // a single-use name only to see it refused (a multi-use code whose name imports also use is not modelled)
      if (!(MULTI as readonly string[]).includes(cmd.code) && !m.codes.has(cmd.code)) return;
      const store = await attempt(() =>
        dibs.pools.addMultiUseCode(pool, { code: cmd.code, uses: cmd.uses, usesPerClaimant: cmd.usesPerClaimant }),
      );
      const model = judged(() => {
        if (m.codes.has(cmd.code) || m.multis.has(cmd.code)) throw refusal('code_exists', { code: cmd.code });
      });
      sameRefusal(what, store, model);
      if (model.ok)
        m.multis.set(cmd.code, {
          code: cmd.code,
          maxUses: cmd.uses,
          perClaimant: cmd.usesPerClaimant,
          uses: 0,
          startsAt: null,
          expiresAt: null,
          orders: new Map(),
        });
      return;
    }
    case 'codeWindow': {
      const window = WINDOWS[cmd.window];
      const store = await attempt(() => dibs.pools.setCodeWindow(pool, cmd.code, window));
      const target = m.multis.get(cmd.code) ?? m.codes.get(cmd.code);
      const model = judged(() => {
        if (!target) throw notFound('code', cmd.code);
      });
      sameRefusal(what, store, model);
      if (target) Object.assign(target, window);
      return;
    }
    case 'limit': {
      const store = await attempt(() => dibs.pools.update(pool, { perClaimantLimit: cmd.perClaimantLimit }));
      const maxHeld = Math.max(0, ...CLAIMANTS.map((who) => m.held(who).length));
      const model = judged(() => judgeLimitChange(cmd.perClaimantLimit, maxHeld));
      sameRefusal(what, store, model);
      if (model.ok) m.rules.perClaimantLimit = cmd.perClaimantLimit;
      return;
    }
    case 'window': {
      await dibs.pools.update(pool, WINDOWS[cmd.window]);
      Object.assign(m.rules, WINDOWS[cmd.window]);
      return;
    }
    case 'redemptions': {
      await dibs.pools.update(pool, {
        maxRedemptions: cmd.maxRedemptions,
        maxRedemptionsPerClaimant: cmd.maxRedemptionsPerClaimant,
      });
      Object.assign(m.rules, {
        maxRedemptions: cmd.maxRedemptions,
        maxRedemptionsPerClaimant: cmd.maxRedemptionsPerClaimant,
      });
      return;
    }
    case 'public': {
      await dibs.pools.update(pool, { publicCodes: cmd.publicCodes });
      m.rules.publicCodes = cmd.publicCodes;
      return;
    }
  }
  // a step on one code answered the code as it now is
  const answer = await dibs.pools.code(pool, cmd.code).catch(() => null);
  if (answer && m.codes.has(cmd.code) && !m.multis.has(cmd.code))
    assert.deepEqual(codeView(answer), modelView(m.code(cmd.code), now), `${what}: the code afterwards`);
}

interface ClaimPlan {
  status: 'claimed' | 'already-held';
  replayed: boolean;
  codes: string[];
  take: number;
  claimable: string[];
}

/** A claim judged by the model: replay, refusal, already-held, or how many of which codes it may take. */
function planClaim(m: PoolModel, claimant: string, count: number, key: string | null, now: string): ClaimPlan {
  const prior = key === null ? undefined : m.keys.get(key);
  if (prior) {
    judgeClaimKey(key!, prior, claimant, count);
    const codes = m
      .held(claimant)
      .filter((c) => c.key === key)
      .map((c) => c.code);
    if (codes.length > 0) return { status: 'claimed', replayed: true, codes, take: codes.length, claimable: [] };
    m.keys.delete(key!); // its codes were all released: the key is spent
  }
  const room = judgeClaim(m.rules, now, m.held(claimant).length, count);
  if (room === 0) return { status: 'already-held', replayed: false, codes: [], take: 0, claimable: [] };
  const claimable = [...m.codes.values()]
    .filter((c) => c.status === 'free' && !holdIsLive(c, now) && windowState(c, now) === 'open')
    .map((c) => c.code);
  if (claimable.length === 0) throw refusal('pool_sold_out', { pool: m.rules.name });
  return { status: 'claimed', replayed: false, codes: [], take: Math.min(room, claimable.length), claimable };
}

/**
 * Disagreements the check found, replayed first on every run. A claim that finds its key spent (all
 * its codes released) and is then refused (sold out here): SQLite and Firestore kept the key (their
 * refused step rolled the deletion back), Redis and PostgreSQL forgot it — so another claimant
 * reusing the key got `conflict` on the first two and a claim on the others. Every store now
 * forgets a spent key whatever the claim that found it answers.
 */
const REGRESSIONS: PoolScenario[] = [
  {
    initial: ['C2', 'C5'],
    perClaimantLimit: 2,
    publicCodes: false,
    commands: [
      { op: 'claim', claimant: 'bob', count: 1, many: false, key: 'k2' },
      { op: 'release', code: 'C2', claimant: null },
      { op: 'release', code: 'C5', claimant: null },
      { op: 'claim', claimant: 'ann', count: 2, many: true, key: null },
      { op: 'claim', claimant: 'bob', count: 1, many: false, key: 'k2' },
      { op: 'claim', claimant: 'ann', count: 1, many: false, key: 'k2' },
    ],
  },
  {
    initial: ['C1'],
    perClaimantLimit: 1,
    publicCodes: false,
    commands: [
      { op: 'claim', claimant: 'bob', count: 1, many: false, key: 'k1' },
      { op: 'release', code: 'C1', claimant: null },
      { op: 'window', window: 'past' },
      { op: 'claim', claimant: 'bob', count: 1, many: false, key: 'k1' },
      { op: 'window', window: 'open' },
      { op: 'claim', claimant: 'cat', count: 1, many: false, key: 'k1' },
    ],
  },
];

/** Expiry seen by every store on every run: a free code held briefly is skipped by a claim, then claimed once the hold is gone. */
const EXPIRY_REGRESSIONS: PoolScenario[] = [
  {
    initial: ['C0'],
    perClaimantLimit: 1,
    publicCodes: true,
    commands: [
      { op: 'hold', code: 'C0', claimant: 'ann', short: true },
      { op: 'claim', claimant: 'bob', count: 1, many: false, key: null },
      { op: 'hold', code: 'C0', claimant: 'bob', short: false },
      { op: 'advance' },
      { op: 'hold', code: 'C0', claimant: 'bob', short: true },
      { op: 'advance' },
      { op: 'claim', claimant: 'cat', count: 1, many: false, key: null },
    ],
  },
];

/** Runs bounded for CI; longer on demand. */
export function modelRuns(base: number): { numRuns: number; seed?: number; path?: string } {
  const runs = Number(process.env.DIBS_MODEL_RUNS ?? (process.env.FAULTS_LONG === '1' ? base * 10 : base));
  return {
    numRuns: runs,
    ...(process.env.DIBS_MODEL_SEED ? { seed: Number(process.env.DIBS_MODEL_SEED) } : {}),
    ...(process.env.DIBS_MODEL_PATH ? { path: process.env.DIBS_MODEL_PATH } : {}),
  };
}

/** The property over `dibs`: each run on a pool of its own (no store is reset between runs). */
export async function checkPools(
  dibs: Dibs,
  label: string,
  options: { runs: number; maxCommands: number; expiry?: Expiry },
): Promise<void> {
  let run = 0;
  const expiry = options.expiry;
  await fc.assert(
    fc.asyncProperty(scenarios(options.maxCommands, expiry !== undefined), async (scenario) => {
      await runPoolScenario(dibs, `model-${label}${expiry ? '-x' : ''}-${process.pid}-${run++}`, scenario, expiry);
    }),
    {
      ...modelRuns(options.runs),
      endOnFailure: false,
      verbose: 0,
      examples: (expiry ? EXPIRY_REGRESSIONS : REGRESSIONS).map((r) => [r] as [PoolScenario]),
    },
  );
  if (process.env.DIBS_MODEL_STATS === '1') console.log(label, Object.fromEntries([...tally].sort()));
}
