/**
 * The admin-storm checkers must be able to fail: fed answers that only a torn rule change could
 * give (a claim over a limit lowered before it was sent, a sale after the window closed or the
 * waiting room opened, a deleted pool still handing out codes), they report them — and they accept
 * the same answers when the request overlapped the change (either version may have judged it).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { AdminChange } from './admin-storm.js';
import {
  checkBuys,
  checkClaims,
  checkHoldings,
  type BuyRecord,
  type ClaimRecord,
  type PoolRules,
  type SaleRules,
} from './admin-storm-suite.js';

const pool: PoolRules = { limit: 2, open: true, exists: true };
const change = <R>(label: string, rules: Partial<R>, t0: number, t1: number): AdminChange<R> => ({
  label,
  accepted: true,
  rules,
  t0,
  t1,
});
const claim = (t0: number, t1: number, extra: Partial<ClaimRecord>): ClaimRecord => ({
  claimant: 'u',
  atMs: 0,
  t0,
  t1,
  status: 'claimed',
  code: `C${t0}`,
  held: ['A', 'B'],
  replayed: false,
  ...extra,
});
const buy = (t0: number, t1: number, extra: Partial<BuyRecord>): BuyRecord => ({
  customer: 'u',
  kind: 'buy',
  quantity: 1,
  thinkMs: 0,
  atMs: 0,
  step: 'buy',
  t0,
  t1,
  status: 'ok',
  orderId: `o${t0}`,
  ...extra,
});

describe('admin-storm checkers catch answers no single rule version allows', () => {
  const lowered = [change<PoolRules>('lower', { limit: 1 }, 100, 110)];

  it('a second code sent after the limit was lowered to 1 is a violation; one that overlapped the change is not', () => {
    assert.equal(checkClaims(pool, lowered, [claim(120, 130, {})]).length, 1);
    assert.deepEqual(checkClaims(pool, lowered, [claim(120, 130, { held: ['A'] })]), []);
    assert.deepEqual(checkClaims(pool, lowered, [claim(120, 130, { held: ['A'] })]), []);
  });

  it('a claim judged by the old limit but left standing after a lowering that did not see it is a violation', () => {
    // sent before the lowering to 1 and answered after it, holding 2: serialised before it, the
    // lowering would have been refused; serialised after it, the claim would have been refused
    assert.equal(checkClaims(pool, lowered, [claim(95, 130, {})]).length, 1);
    const raisedAgain = [...lowered, change<PoolRules>('raise', { limit: 2 }, 200, 210)];
    assert.deepEqual(checkClaims(pool, raisedAgain, [claim(195, 230, {})]), [], 'judged after the raise');
  });

  it('already-held below the limit in force is a violation (judged by rules that were not in force)', () => {
    const raised = [change<PoolRules>('raise', { limit: 3 }, 100, 110)];
    assert.equal(checkClaims(pool, raised, [claim(120, 130, { status: 'already-held', held: ['A', 'B'] })]).length, 1);
    assert.deepEqual(checkClaims(pool, raised, [claim(90, 130, { status: 'already-held', held: ['A', 'B'] })]), []);
  });

  it('a claim sent after the window closed, or after the pool was deleted, must not succeed; expired / not_found before the change are wrong too', () => {
    const closed = [
      change<PoolRules>('close', { open: false }, 100, 110),
      change<PoolRules>('reopen', { open: true }, 200, 210),
    ];
    assert.equal(checkClaims(pool, closed, [claim(120, 130, { held: ['A'] })]).length, 1);
    assert.deepEqual(
      checkClaims(pool, closed, [claim(120, 130, { status: 'error', error: 'expired', held: undefined })]),
      [],
    );
    assert.equal(
      checkClaims(pool, closed, [claim(220, 230, { status: 'error', error: 'expired', held: undefined })]).length,
      1,
    );
    assert.deepEqual(
      checkClaims(pool, closed, [claim(120, 130, { held: ['A'], replayed: true })]),
      [],
      'a replay answers whatever the window',
    );
    const deleted = [change<PoolRules>('delete', { exists: false }, 100, 110)];
    assert.equal(checkClaims(pool, deleted, [claim(120, 130, { held: ['A'] })]).length, 1);
    assert.equal(checkClaims(pool, deleted, [claim(20, 30, { status: 'error', error: 'not_found' })]).length, 1);
    assert.equal(
      checkClaims(pool, [], [claim(20, 30, { status: 'error', error: 'unavailable' })]).length,
      1,
      'an unexpected error',
    );
  });

  it('one code to two claimants, a key answering two codes, a lost code, a holder over the final limit', () => {
    assert.equal(
      checkClaims(pool, [], [claim(1, 2, { code: 'X' }), claim(3, 4, { code: 'X', claimant: 'v' })]).length,
      1,
    );
    assert.equal(
      checkClaims(pool, [], [claim(1, 2, { code: 'X', key: 'k' }), claim(3, 4, { code: 'Y', key: 'k' })]).length,
      1,
    );
    assert.equal(checkHoldings([claim(1, 2, { code: 'X' })], new Map([['u', ['Y']]]), 2).length, 1);
    assert.equal(checkHoldings([], new Map([['u', ['X', 'Y', 'Z']]]), 2).length, 1);
  });

  it('a buy sent after the end moved or the waiting room opened must not succeed; not_live / ticket_required before them are wrong', () => {
    const sale: SaleRules = { open: true, room: false };
    const ended = [change<SaleRules>('end', { open: false }, 100, 110)];
    assert.equal(checkBuys(sale, ended, [buy(120, 130, {})]).length, 1);
    assert.deepEqual(
      checkBuys(sale, ended, [buy(105, 130, {}), buy(120, 130, { status: 'error', error: 'not_live' })]),
      [],
    );
    assert.equal(checkBuys(sale, ended, [buy(20, 30, { status: 'error', error: 'not_live' })]).length, 1);
    const room = [change<SaleRules>('room', { room: true }, 100, 110)];
    assert.equal(checkBuys(sale, room, [buy(120, 130, { kind: 'reserve', step: 'reserve' })]).length, 1);
    assert.deepEqual(
      checkBuys(sale, room, [
        buy(120, 130, { status: 'error', error: 'ticket_required' }),
        buy(120, 130, { step: 'confirm' }),
      ]),
      [],
    );
    assert.equal(checkBuys(sale, room, [buy(20, 30, { status: 'error', error: 'ticket_required' })]).length, 1);
  });
});
