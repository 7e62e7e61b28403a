/**
 * The rate-limit storm checker must be able to fail: fed histories that over-admit, or deny
 * while there was room, it has to throw for each algorithm.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { LimitDefinition } from '../../src/index.js';
import { assertLimitHonoured, type Decision } from './limit-storm.js';

const def = (algorithm: LimitDefinition['algorithm'], extra: Partial<LimitDefinition> = {}): LimitDefinition => ({
  name: 'x',
  algorithm,
  limit: 4,
  periodMs: 1000,
  burst: 4,
  segments: algorithm === 'sliding-window' ? 4 : 1,
  createdAt: '',
  updatedAt: '',
  ...extra,
});
const yes = (t: number): Decision => ({ l: 'x', a: 1, t });
const no = (t: number): Decision => ({ l: 'x', a: 0, t });

describe('rate-limit storm checker catches broken limiters', () => {
  it('token bucket: accepts GCRA, rejects a burst too big and a denial with room', () => {
    // 4 per s, burst 2: two at once, then one every 250 ms
    const tb = def('token-bucket', { burst: 2 });
    assert.doesNotThrow(() => assertLimitHonoured(tb, [yes(0), yes(0), no(1), yes(250), no(251), yes(500)]));
    assert.throws(() => assertLimitHonoured(tb, [yes(0), yes(0), yes(1), no(2)]), /admitted in|did not fit/);
    assert.throws(() => assertLimitHonoured(tb, [yes(0), yes(0), no(1), no(260)]), /denied at 260 with room/);
  });

  it('sliding window: rejects limit + 1 in one window, and a denial below the limit', () => {
    const sw = def('sliding-window');
    assert.doesNotThrow(() => assertLimitHonoured(sw, [yes(0), yes(1), yes(2), yes(3), no(4), no(999), yes(1251)]));
    assert.throws(
      () => assertLimitHonoured(sw, [yes(0), yes(1), yes(2), yes(3), no(4), yes(999)]),
      /5 admitted in the window/,
    );
    assert.throws(() => assertLimitHonoured(sw, [yes(0), yes(1), no(4)]), /denied at 4 with only 2/);
  });

  it('quota: rejects limit + 1 in a period, and a denial in a period not used up', () => {
    const q = def('quota');
    assert.doesNotThrow(() => assertLimitHonoured(q, [yes(0), yes(1), yes(2), yes(3), no(4), yes(1000)]));
    assert.throws(
      () => assertLimitHonoured(q, [yes(0), yes(1), yes(2), yes(3), yes(999), no(999)]),
      /5 admitted in period 0/,
    );
    assert.throws(() => assertLimitHonoured(q, [yes(0), no(4), yes(1000)]), /only 1 of 4/);
  });
});
