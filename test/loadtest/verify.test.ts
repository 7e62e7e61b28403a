/**
 * The verifier must be able to fail: fed answers and store states that break each promise,
 * it returns a violation naming it. Pure inputs first, then the same cases as the storm
 * checker's own test against a real SQLite pool (so storm.ts can become a wrapper over it).
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Dibs } from '../../src/index.js';
import type { ClaimOutcome, CodeState } from '../../src/loadtest/types.js';
import { verifyPool, verifyRun, type VerifyExpectations } from '../../src/loadtest/verify.js';
import { openTempSqlite } from '../support/sqlite.js';

const won = (claimant: string, code: string, extra: Partial<ClaimOutcome> = {}): ClaimOutcome => ({
  claimant,
  attempt: 0,
  status: 'claimed',
  code,
  held: [code],
  replayed: false,
  ms: 1,
  ...extra,
});
const lost = (claimant: string, extra: Partial<ClaimOutcome> = {}): ClaimOutcome => ({
  claimant,
  attempt: 0,
  status: 'error',
  error: 'sold_out',
  ms: 1,
  ...extra,
});
const held = (code: string, claimant: string): CodeState => ({ code, status: 'claimed', claimant });
const free = (code: string): CodeState => ({ code, status: 'free', claimant: null });

/** A consistent two-code pool where u1 holds A and u2 holds B, u3 heard sold_out. */
function cleanRun() {
  return {
    outcomes: [won('u1', 'A'), won('u2', 'B'), lost('u3')],
    codes: [held('A', 'u1'), held('B', 'u2')],
    stats: { total: 2, free: 0, claimed: 2, redeemed: 0, revoked: 0 },
    audit: [] as { invariant?: string; message: string }[],
    expect: { codes: 2, total: 2, perClaimantLimit: 1, requests: 3 } as VerifyExpectations,
  };
}

const checks = (r: ReturnType<typeof verifyRun>) => r.violations.map((v) => v.check);
const text = (r: ReturnType<typeof verifyRun>) => r.violations.map((v) => v.message).join('\n');

describe('verifyRun: pure checks', () => {
  it('accepts a clean run and adds the numbers up', () => {
    const r = verifyRun(cleanRun());
    assert.deepEqual(r.violations, []);
    assert.equal(r.ok, true);
    assert.deepEqual(
      {
        winners: r.summary.winners,
        losers: r.summary.losers,
        codesGiven: r.summary.codesGiven,
        demand: r.summary.demand,
        expected: r.summary.expectedCodesGiven,
        soldOut: r.summary.soldOut,
      },
      { winners: 2, losers: 1, codesGiven: 2, demand: 3, expected: 2, soldOut: 1 },
    );
  });

  it('I1: one code acknowledged to two claimants', () => {
    const run = cleanRun();
    run.outcomes[1] = won('u2', 'A');
    const r = verifyRun(run);
    assert.equal(r.ok, false);
    assert.match(text(r), /I1: code A was acknowledged to u1 and to u2/);
  });

  it('I2: a claimant acknowledged more codes than its limit', () => {
    const run = cleanRun();
    run.outcomes = [won('u1', 'A'), won('u1', 'B', { attempt: 1 }), lost('u3')];
    run.codes = [held('A', 'u1'), held('B', 'u1')];
    const r = verifyRun(run);
    assert.match(text(r), /I2: u1 was acknowledged 2 codes, limit 1/);
    assert.match(text(r), /I2: u1 holds 2 codes, limit 1/);
  });

  it('I2: a retried idempotency key answered with another code', () => {
    const run = cleanRun();
    run.outcomes = [won('u1', 'A', { key: 'k' }), won('u1', 'B', { key: 'k', replayed: true })];
    run.codes = [held('A', 'u1'), held('B', 'u1')];
    run.expect = { ...run.expect, perClaimantLimit: 2, requests: 2 };
    assert.match(text(verifyRun(run)), /I2: retry of key k answered B, the original answer was A/);
  });

  it('I4: counters that disagree with the ledger', () => {
    const run = cleanRun();
    run.stats = { total: 2, free: 1, claimed: 1, redeemed: 0, revoked: 0 };
    const r = verifyRun(run);
    assert.ok(checks(r).includes('I4'));
    assert.match(text(r), /I4: claimed counter is 1 but the ledger has 2/);
    assert.match(text(r), /I4: free counter is 1 but the ledger has 0/);
  });

  it('I4: a total that is not what the pool was filled with', () => {
    const run = cleanRun();
    run.expect = { ...run.expect, total: 3 };
    assert.match(text(verifyRun(run)), /I4: total counter is 2, the pool was filled with 3/);
  });

  it('I5: an acknowledged claim the store no longer has', () => {
    const run = cleanRun();
    run.codes = [held('A', 'u1'), free('B')];
    run.stats = { total: 2, free: 1, claimed: 1, redeemed: 0, revoked: 0 };
    assert.match(text(verifyRun(run)), /I5: acknowledged code B of u2 is held by nobody now/);
  });

  it('I5: a code held by someone no answer named', () => {
    const run = cleanRun();
    run.outcomes = [won('u1', 'A'), lost('u2'), lost('u3')];
    assert.match(text(verifyRun(run)), /I5: code B is held by u2 but no answer said so/);
  });

  it('numbers: sold_out while codes stayed free, and fewer codes handed out than demand', () => {
    const run = cleanRun();
    run.outcomes = [won('u1', 'A'), lost('u2')];
    run.codes = [held('A', 'u1'), free('B')];
    run.stats = { total: 2, free: 1, claimed: 1, redeemed: 0, revoked: 0 };
    run.expect = { ...run.expect, requests: 2 };
    const r = verifyRun(run);
    assert.match(text(r), /handed out 1 codes for demand 2 and supply 2/);
    assert.match(text(r), /sold_out: 1 answer said sold_out while 1 codes were still free/);
  });

  it('numbers: requests that never got an answer', () => {
    const run = cleanRun();
    run.expect = { ...run.expect, requests: 5 };
    assert.match(text(verifyRun(run)), /3 of 5 requests were answered/);
  });

  it('errors: any error other than sold_out, unless allowed', () => {
    const run = cleanRun();
    run.outcomes = [...run.outcomes, lost('u4', { error: 'unavailable' })];
    run.expect = { ...run.expect, requests: 4 };
    assert.match(text(verifyRun(run)), /unexpected errors: \{"sold_out":1,"unavailable":1\}/);
    assert.equal(verifyRun({ ...run, expect: { ...run.expect, allowedErrors: ['unavailable'] } }).ok, true);
  });

  it('answers: an already-held answer naming a code the claimant does not hold', () => {
    const run = cleanRun();
    run.outcomes = [
      ...run.outcomes,
      { claimant: 'u1', attempt: 1, status: 'already-held', code: 'B', held: ['A'], replayed: false, ms: 1 },
    ];
    run.expect = { ...run.expect, requests: 4 };
    assert.match(text(verifyRun(run)), /already-held answer for u1 names a code it does not hold/);
  });

  it('audit: every finding of the backend audit is a violation', () => {
    const run = cleanRun();
    run.audit = [{ invariant: 'I7', message: 'two low-stock events' }];
    const r = verifyRun(run);
    assert.deepEqual(r.violations, [{ check: 'audit', message: 'audit I7: two low-stock events' }]);
  });

  it('keeps the list readable when thousands break: capped per check, with a count', () => {
    const outcomes = Array.from({ length: 50 }, (_, i) => won(`u${i}`, 'A'));
    const r = verifyRun({
      outcomes,
      codes: [held('A', 'u0')],
      stats: { total: 1, free: 0, claimed: 1, redeemed: 0, revoked: 0 },
      audit: [],
      expect: { codes: 1, perClaimantLimit: 1, maxPerCheck: 5 },
    });
    const i1 = r.violations.filter((v) => v.check === 'I1');
    assert.equal(i1.length, 6);
    assert.match(i1.at(-1)!.message, /and 44 more I1 violations/);
  });

  it('codes held before the run are not held against it', () => {
    const run = cleanRun();
    run.codes = [...run.codes, held('OLD', 'someone-else'), free('C')];
    run.stats = { total: 4, free: 1, claimed: 3, redeemed: 0, revoked: 0 };
    run.expect = { codes: 3, perClaimantLimit: 1, requests: 3, heldBefore: ['OLD'] };
    // Supply 3 (A, B, C free at the start), demand 3: one code too few went out, and u3 heard sold_out.
    assert.match(text(verifyRun(run)), /handed out 2 codes for demand 3 and supply 3/);
    run.outcomes[2] = won('u3', 'C');
    run.codes[3] = held('C', 'u3');
    run.stats = { total: 4, free: 0, claimed: 4, redeemed: 0, revoked: 0 };
    assert.deepEqual(verifyRun(run).violations, []);
  });
});

describe('verifyPool: the storm checker cases, against a real SQLite pool', () => {
  let env: Awaited<ReturnType<typeof openTempSqlite>>;
  let dibs: Dibs;
  before(async () => {
    env = await openTempSqlite();
    dibs = env.dibs;
  });
  after(() => env.cleanup());

  async function poolWith(name: string, claimants: string[]): Promise<void> {
    await dibs.pools.create({ name });
    await dibs.pools.importCodes(name, ['A', 'B']);
    for (const claimant of claimants) await dibs.pools.claim(name, claimant);
  }
  /** The codes SQLite actually handed out, so the "clean" outcomes are true answers. */
  async function answers(name: string): Promise<ClaimOutcome[]> {
    const out: ClaimOutcome[] = [];
    for await (const batch of dibs.pools.exportCodes(name))
      for (const c of batch) if (c.claimant) out.push(won(c.claimant, c.code));
    return out.sort((a, b) => a.claimant.localeCompare(b.claimant));
  }
  const expect = (extra: Partial<VerifyExpectations> = {}): VerifyExpectations => ({
    codes: 2,
    total: 2,
    perClaimantLimit: 1,
    ...extra,
  });
  const messages = async (name: string, outcomes: ClaimOutcome[], e = expect()) =>
    (await verifyPool(dibs, name, outcomes, e)).violations.map((v) => v.message).join('\n');

  it('accepts a clean storm', async () => {
    await poolWith('clean', ['u1', 'u2']);
    const r = await verifyPool(dibs, 'clean', [...(await answers('clean')), lost('u3')], expect());
    assert.deepEqual(r.violations, []);
    assert.equal(r.summary.codesGiven, 2);
  });

  it('rejects one code acknowledged to two claimants (I1)', async () => {
    await poolWith('double', ['u1', 'u2']);
    const [a] = await answers('double');
    assert.match(await messages('double', [a!, won('u2', a!.code!)]), /I1/);
  });

  it('rejects a claimant acknowledged over its limit (I2)', async () => {
    await poolWith('over', ['u1', 'u2']);
    assert.match(await messages('over', [won('u1', 'A'), won('u1', 'B', { attempt: 1 })]), /I2/);
  });

  it('rejects a retried key answered with another code (I2)', async () => {
    await poolWith('retry', ['u1', 'u2']);
    assert.match(
      await messages(
        'retry',
        [won('u1', 'A', { key: 'k' }), won('u1', 'B', { key: 'k' })],
        expect({ perClaimantLimit: 2 }),
      ),
      /I2/,
    );
  });

  it('rejects an acknowledged claim the backend no longer has (I5)', async () => {
    await poolWith('lost', ['u1']);
    const [a] = await answers('lost');
    assert.match(await messages('lost', [a!, won('u9', a!.code === 'A' ? 'B' : 'A')]), /I5/);
  });

  it('rejects sold_out answers while codes stayed free', async () => {
    await poolWith('stranded', ['u1']);
    assert.match(await messages('stranded', [...(await answers('stranded')), lost('u2')]), /handed out|sold_out/);
  });

  it('rejects unexpected errors', async () => {
    await poolWith('errors', ['u1', 'u2']);
    assert.match(
      await messages('errors', [...(await answers('errors')), lost('u3', { error: 'unavailable' })]),
      /unexpected errors/,
    );
  });

  it('reports what the backend audit finds (I4 counter drift)', async () => {
    await poolWith('drift', ['u1', 'u2']);
    // Corrupt the counter behind dibs' back, as a buggy backend would.
    const { default: Database } = await import('better-sqlite3');
    const db = new Database(env.store.replace(/^sqlite:/, ''));
    db.prepare("UPDATE dibs_pools SET free = free + 1 WHERE name = 'drift'").run();
    db.close();
    const text = await messages('drift', [...(await answers('drift')), lost('u3')]);
    assert.match(text, /I4: free counter is 1 but the ledger has 0/);
    assert.match(text, /audit I4/);
  });
});
