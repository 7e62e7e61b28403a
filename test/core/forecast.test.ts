/** Forecasts on synthetic streams with known rates, and the predicted-empty alert's crossings. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { emptySoonStep, forecastFrom, type WindowCount } from '../../src/core/forecast.js';

const AT = '2026-11-23T12:00:00.000Z';
/** Counts a steady stream of `perSecond` that started `startedSecAgo` seconds ago would leave in each window. */
function steady(perSecond: number, startedSecAgo: number): WindowCount[] {
  return [60, 300, 900].map((w) => {
    const active = Math.min(w, startedSecAgo);
    return { taken: Math.round(perSecond * active), spanMs: active * 1000 };
  });
}

describe('forecast', () => {
  it('recovers a steady rate and the time to empty (within 2%)', () => {
    for (const [rate, ago, remaining] of [
      [2, 3600, 600],
      [50, 20, 10_000],
      [0.5, 700, 30],
    ] as const) {
      const f = forecastFrom({ kind: 'pool', subject: 'p', windows: steady(rate, ago), remaining, at: AT });
      const expectedMs = (remaining / rate) * 1000;
      assert.ok(
        Math.abs(f.timeToEmptyMs! - expectedMs) / expectedMs < 0.02,
        `${rate}/s for ${ago}s: ${f.timeToEmptyMs} vs ${expectedMs}`,
      );
      assert.equal(Date.parse(f.emptyAt!) - Date.parse(AT), f.timeToEmptyMs);
    }
  });

  it('a sale that opened 20 s ago is judged by those 20 s, not a mostly empty minute', () => {
    const f = forecastFrom({ kind: 'sale', subject: 's', windows: steady(10, 20), remaining: 1000, at: AT });
    assert.equal(f.basis, '1m');
    assert.equal(f.perMinute['1m'], 600);
    assert.ok(Math.abs(f.timeToEmptyMs! - 100_000) < 2000);
  });

  it('thin traffic falls back to a longer window; none at all never empties; empty is 0', () => {
    const thin = forecastFrom({
      kind: 'pool',
      subject: 'p',
      windows: [
        { taken: 2, spanMs: 30_000 },
        { taken: 12, spanMs: 290_000 },
        { taken: 30, spanMs: 890_000 },
      ],
      remaining: 100,
      at: AT,
    });
    assert.equal(thin.basis, '5m');
    const none = forecastFrom({
      kind: 'pool',
      subject: 'p',
      windows: [
        { taken: 0, spanMs: 0 },
        { taken: 0, spanMs: 0 },
        { taken: 0, spanMs: 0 },
      ],
      remaining: 100,
      at: AT,
    });
    assert.equal(none.timeToEmptyMs, null);
    assert.equal(none.basis, null);
    assert.equal(
      forecastFrom({ kind: 'pool', subject: 'p', windows: steady(1, 60), remaining: 0, at: AT }).timeToEmptyMs,
      0,
    );
    assert.equal(
      forecastFrom({ kind: 'sale', subject: 's', windows: steady(1, 60), remaining: null, at: AT }).timeToEmptyMs,
      null,
    );
  });

  it('the empty-soon alert fires exactly once per crossing, with hysteresis', () => {
    const within = 600_000;
    // predicted time to empty over successive checks: falls through the line, hovers, recovers, falls again
    const series = [2_000_000, 900_000, 590_000, 610_000, 580_000, 650_000, 1_000_000, 400_000, 300_000, null, 100_000];
    let armed = true;
    const fired: number[] = [];
    series.forEach((ttl, i) => {
      const step = emptySoonStep(armed, ttl, within);
      armed = step.armed;
      if (step.fire) fired.push(i);
    });
    assert.deepEqual(fired, [2, 7, 10]);
  });
});
