/**
 * The storm checker must be able to fail: fed outcomes that break each invariant (or a
 * backend state that contradicts them), it has to throw.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Dibs } from '../../src/index.js';
import { openTempSqlite } from './sqlite.js';
import { assertStormInvariants, type StormOutcome } from './storm.js';

describe('storm checker catches broken invariants', () => {
  let env: Awaited<ReturnType<typeof openTempSqlite>>;
  let dibs: Dibs;
  before(async () => {
    env = await openTempSqlite();
    dibs = env.dibs;
  });
  after(() => env.cleanup());

  const won = (claimant: string, code: string, extra: Partial<StormOutcome> = {}): StormOutcome => ({
    claimant,
    attempt: 0,
    status: 'claimed',
    code,
    held: [code],
    replayed: false,
    ms: 1,
    ...extra,
  });
  const lost = (claimant: string): StormOutcome => ({
    claimant,
    attempt: 0,
    status: 'error',
    error: 'sold_out',
    ms: 1,
  });

  async function poolWith(name: string, claims: [string, string][]): Promise<void> {
    await dibs.pools.create({ name });
    await dibs.pools.importCodes(name, ['A', 'B']);
    for (const [claimant] of claims) await dibs.pools.claim(name, claimant);
  }

  it('accepts a clean storm', async () => {
    await poolWith('clean', [
      ['u1', 'A'],
      ['u2', 'B'],
    ]);
    const summary = await assertStormInvariants(dibs, 'clean', [won('u1', 'A'), won('u2', 'B'), lost('u3')], {
      codes: 2,
      perClaimantLimit: 1,
    });
    assert.equal(summary.codesGiven, 2);
  });

  it('rejects one code acknowledged to two claimants (I1)', async () => {
    await poolWith('double', [
      ['u1', 'A'],
      ['u2', 'B'],
    ]);
    await assert.rejects(
      assertStormInvariants(dibs, 'double', [won('u1', 'A'), won('u2', 'A')], { codes: 2, perClaimantLimit: 1 }),
      /I1/,
    );
  });

  it('rejects a claimant acknowledged over its limit (I2)', async () => {
    await poolWith('over', [
      ['u1', 'A'],
      ['u2', 'B'],
    ]);
    await assert.rejects(
      assertStormInvariants(dibs, 'over', [won('u1', 'A'), won('u1', 'B', { attempt: 1 })], {
        codes: 2,
        perClaimantLimit: 1,
      }),
      /I2/,
    );
  });

  it('rejects a retried key answered with another code (I2)', async () => {
    await poolWith('retry', [
      ['u1', 'A'],
      ['u2', 'B'],
    ]);
    const outcomes = [won('u1', 'A', { key: 'k' }), won('u1', 'B', { key: 'k' })];
    await assert.rejects(assertStormInvariants(dibs, 'retry', outcomes, { codes: 2, perClaimantLimit: 2 }), /I2/);
  });

  it('rejects an acknowledged claim the backend no longer has (I5)', async () => {
    await poolWith('lost', [['u1', 'A']]);
    await assert.rejects(
      assertStormInvariants(dibs, 'lost', [won('u1', 'A'), won('u9', 'B')], { codes: 2, perClaimantLimit: 1 }),
      /I5/,
    );
  });

  it('rejects sold_out answers while codes stayed free', async () => {
    await poolWith('stranded', [['u1', 'A']]);
    await assert.rejects(
      assertStormInvariants(dibs, 'stranded', [won('u1', 'A'), lost('u2')], { codes: 2, perClaimantLimit: 1 }),
      /handed out|sold_out/,
    );
  });

  it('rejects unexpected errors', async () => {
    await poolWith('errors', [
      ['u1', 'A'],
      ['u2', 'B'],
    ]);
    const outcomes = [
      won('u1', 'A'),
      won('u2', 'B'),
      { claimant: 'u3', attempt: 0, status: 'error' as const, error: 'unavailable', ms: 1 },
    ];
    await assert.rejects(
      assertStormInvariants(dibs, 'errors', outcomes, { codes: 2, perClaimantLimit: 1 }),
      /unexpected errors/,
    );
  });
});
