/**
 * The forecast suite, run per backend: forecasts from a real claim stream at a known pace, and the predicted-empty alert
 * recorded once per crossing in the outbox — even when several checks race.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { describe, it } from 'node:test';
import type { Dibs } from '../../src/index.js';

export function forecastConformance(label: string, temp: { readonly dibs: Dibs }): void {
  describe(`${label}: forecasts`, () => {
    it('estimates the pace of a claim stream and the time to empty', async () => {
      const { dibs } = temp;
      await dibs.pools.create({ name: 'fc' });
      await dibs.pools.importCodes(
        'fc',
        Array.from({ length: 500 }, (_, i) => `F${i}`),
      );
      const started = performance.now();
      for (let i = 0; i < 60; i++) {
        await dibs.pools.claim('fc', `u${i}`);
        await sleep(25);
      }
      const f = await dibs.forecasts.pool('fc');
      // the pace the clients actually achieved (the machine may be slower than the plan)
      const achievedPerMinute = (59 / (performance.now() - started)) * 60_000;
      assert.equal(f.remaining, 440);
      assert.equal(f.basis, '1m');
      assert.ok(
        Math.abs(f.perMinute['1m'] - achievedPerMinute) / achievedPerMinute < 0.35,
        `estimate ${f.perMinute['1m']}/min vs achieved ${Math.round(achievedPerMinute)}/min`,
      );
      const expectedMs = (440 / achievedPerMinute) * 60_000;
      assert.ok(
        Math.abs(f.timeToEmptyMs! - expectedMs) / expectedMs < 0.35,
        `time to empty ${f.timeToEmptyMs} vs ${Math.round(expectedMs)}`,
      );
    });

    it('fires pool.empty_soon once per crossing (racing checks included), re-arms after a refill', async () => {
      const { dibs } = temp;
      await dibs.pools.create({ name: 'alert' });
      await dibs.pools.importCodes(
        'alert',
        Array.from({ length: 40 }, (_, i) => `A${i}`),
      );
      await dibs.forecasts.watchPool('alert', 60_000);
      for (let i = 0; i < 30; i++) await dibs.pools.claim('alert', `u${i}`);
      // 10 left at a pace of many per second: predicted empty within the minute
      const results = await Promise.all(Array.from({ length: 5 }, () => dibs.forecasts.checkWatches()));
      assert.equal(
        results.flat().filter((f) => f.subject === 'alert').length,
        1,
        'one alert although five checks raced',
      );
      await dibs.forecasts.checkWatches();
      const events = async () =>
        (await dibs.pools.events({ pool: 'alert' })).filter((e) => e.type === 'pool.empty_soon');
      assert.equal((await events()).length, 1);
      assert.equal((await events())[0]!.payload.remaining, 10);

      // a refill pushes the prediction far out: re-armed, no event. The pace can only fall from
      // here (the same claims over a longer span), so units for twice the re-arm line (1.5 × 60 s)
      // at today's pace are enough on every store — a slow store is not made to import thousands
      const pace = (await dibs.forecasts.pool('alert')).perMinute['1m'];
      const refill = Math.ceil(pace * 1.5 * 2);
      await dibs.pools.importCodes(
        'alert',
        Array.from({ length: refill }, (_, i) => `R${i}`),
      );
      assert.equal((await dibs.forecasts.checkWatches()).length, 0);
      assert.equal((await events()).length, 1);
      await dibs.forecasts.watchPool('alert', null);
    });

    it('sales count held units as gone; unknown subjects are not_found', async () => {
      const { dibs } = temp;
      const sale = await dibs.sales.create({
        sku: 'FC',
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap: 100,
        perCustomerLimit: 5,
      });
      for (let i = 0; i < 12; i++) await dibs.sales.buy(sale.id, `b${i}`, 2);
      await dibs.sales.reserve(sale.id, 'holder', 5, 60_000);
      const f = await dibs.forecasts.sale(sale.id);
      assert.equal(f.remaining, 100 - 24 - 5);
      assert.equal(f.basis, '1m');
      assert.ok(f.perMinute['1m'] > 0);
      await assert.rejects(dibs.forecasts.pool('nope'), (e: { code?: string }) => e.code === 'not_found');
    });
  });
}
