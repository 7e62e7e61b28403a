/**
 * The sale and lock checkers must be able to fail: fed answers and final states that break each
 * promise, they name it; fed a consistent run, they find nothing.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { ClaimOutcome, SaleFinalStats } from '../../src/loadtest/types.js';
import { verifyLockRun, verifySaleRun } from '../../src/loadtest/verify-modes.js';

const order = (claimant: string, id: string, extra: Partial<ClaimOutcome> = {}): ClaimOutcome => ({
  claimant,
  attempt: 0,
  status: 'claimed',
  code: id,
  units: 1,
  replayed: false,
  ms: 1,
  ...extra,
});
const soldOut = (claimant: string): ClaimOutcome => ({
  claimant,
  attempt: 0,
  status: 'error',
  error: 'sold_out',
  ms: 1,
});
const final = (sold: number, held = 0, cap = 2): SaleFinalStats => ({ cap, sold, held, available: cap - sold - held });
const expectSale = { cap: 2, qty: 1, perCustomerLimit: 1, requests: 3 };
const checksOf = (r: { violations: { check: string }[] }) => [...new Set(r.violations.map((v) => v.check))].sort();

describe('sale checker', () => {
  const clean = [order('u1', 'o1'), order('u2', 'o2'), soldOut('u3')];

  it('passes a consistent run', () => {
    const r = verifySaleRun({ outcomes: clean, final: final(2), audit: [], expect: expectSale });
    assert.deepEqual(r.violations, []);
    assert.equal(r.summary.given, 2);
    assert.equal(r.summary.losers, 1);
  });

  it('catches oversell (I3), also through holds', () => {
    assert.ok(
      checksOf(
        verifySaleRun({
          outcomes: [...clean, order('u4', 'o3')],
          final: final(3),
          audit: [],
          expect: { ...expectSale, requests: 4 },
        }),
      ).includes('I3'),
    );
    assert.ok(
      checksOf(verifySaleRun({ outcomes: clean, final: final(2, 1), audit: [], expect: expectSale })).includes('I3'),
    );
  });

  it('catches oversell by a store that lifted its own cap (I3 against the cap the sale was created with)', () => {
    const r = verifySaleRun({
      outcomes: [...clean, order('u4', 'o3')],
      final: final(3, 0, 3),
      audit: [],
      expect: { ...expectSale, requests: 4 },
    });
    assert.ok(
      r.violations.some((v) => v.check === 'I3' && /created with a cap of 2/.test(v.message)),
      JSON.stringify(r.violations),
    );
    assert.ok(
      r.violations.some((v) => v.check === 'I3' && /3 units were acknowledged for a cap of 2/.test(v.message)),
      JSON.stringify(r.violations),
    );
  });

  it('catches a lost acknowledged order and a phantom sale (I5)', () => {
    assert.ok(
      checksOf(verifySaleRun({ outcomes: clean, final: final(1), audit: [], expect: expectSale })).includes('I5'),
    );
    assert.ok(
      checksOf(
        verifySaleRun({
          outcomes: [order('u1', 'o1'), soldOut('u2'), soldOut('u3')],
          final: final(2),
          audit: [],
          expect: expectSale,
        }),
      ).includes('I5'),
    );
  });

  it('catches a customer over the limit and a retry answered with another order (I2)', () => {
    const twice = [order('u1', 'o1', { key: 'k' }), order('u1', 'o2', { key: 'k' }), soldOut('u3')];
    const r = verifySaleRun({ outcomes: twice, final: final(2), audit: [], expect: expectSale });
    assert.ok(r.violations.some((v) => v.check === 'I2' && /limit 1/.test(v.message)));
    assert.ok(r.violations.some((v) => v.check === 'I2' && /retry of key k/.test(v.message)));
  });

  it('catches one order acknowledged to two customers (I1) and sold_out while units were left', () => {
    assert.ok(
      checksOf(
        verifySaleRun({
          outcomes: [order('u1', 'o1'), order('u2', 'o1'), soldOut('u3')],
          final: final(1),
          audit: [],
          expect: expectSale,
        }),
      ).includes('I1'),
    );
    const early = verifySaleRun({
      outcomes: [order('u1', 'o1'), soldOut('u2'), soldOut('u3')],
      final: final(1),
      audit: [],
      expect: expectSale,
    });
    assert.ok(early.violations.some((v) => v.check === 'numbers' && /still available/.test(v.message)));
  });

  it('reports the audit and unexpected errors', () => {
    const r = verifySaleRun({
      outcomes: [order('u1', 'o1'), order('u2', 'o2'), { ...soldOut('u3'), error: 'unavailable' }],
      final: final(2),
      audit: [{ invariant: 'I4', message: 'counter off' }],
      expect: expectSale,
    });
    assert.deepEqual(checksOf(r), ['audit', 'errors']);
  });
});

describe('lock checker', () => {
  const section = (who: string, key: string, fence: number, start: number, end: number): ClaimOutcome => ({
    claimant: who,
    attempt: 0,
    status: 'claimed',
    code: `${key}#${fence}`,
    resource: key,
    fence,
    start,
    end,
    ms: 1,
  });
  const clean = [section('a', 'k1', 1, 0, 10), section('b', 'k1', 2, 10, 20), section('c', 'k2', 1, 5, 15)];

  it('passes exclusive sections and measures parallelism across keys', () => {
    const r = verifyLockRun({ outcomes: clean, liveHolders: 0, expect: { requests: 3 } });
    assert.deepEqual(r.violations, []);
    assert.equal(r.final.acquisitions, 3);
    assert.ok(r.final.crossKeyOverlaps >= 1);
  });

  it('catches overlapping holders of one key and fences out of order (I6)', () => {
    const overlap = verifyLockRun({
      outcomes: [section('a', 'k1', 1, 0, 10), section('b', 'k1', 2, 9, 20)],
      liveHolders: 0,
      expect: { requests: 2 },
    });
    assert.ok(overlap.violations.some((v) => v.check === 'I6' && /before a \(fence 1\) left/.test(v.message)));
    assert.equal(overlap.final.overlapMs, 1);
    const fences = verifyLockRun({
      outcomes: [section('a', 'k1', 2, 0, 10), section('b', 'k1', 1, 10, 20)],
      liveHolders: 0,
      expect: { requests: 2 },
    });
    assert.ok(fences.violations.some((v) => v.check === 'I6' && /fence 1/.test(v.message)));
  });

  it('catches leftover leases, missing answers and errors', () => {
    const r = verifyLockRun({
      outcomes: [clean[0]!, { claimant: 'x', attempt: 0, status: 'error', error: 'lock_timeout', ms: 1 }],
      liveHolders: 1,
      expect: { requests: 3 },
    });
    assert.deepEqual(checksOf(r), ['errors', 'numbers']);
    assert.equal(r.violations.filter((v) => v.check === 'numbers').length, 2);
  });
});
