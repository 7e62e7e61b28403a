/**
 * Forecasts on Redis. The counts come from time indexes kept by the steps themselves — a pool's
 * claim times (claim.lua, zset code → claimed at; released and revoked codes leave it) and a
 * sale's order times (sale_lib.lua insert_order) — read with the free/remaining units in one
 * read-only script on the subject's slot, by the store's clock.
 *
 * A watch lives beside its subject (same slot). The alert check reads the snapshot, lets the
 * shared rules decide (core/forecast.ts emptySoonStep), and applies the decision with one script
 * that records the `<kind>.empty_soon` event only if the watch is still as the snapshot saw it:
 * racing checks (any process) record one crossing once. The list of watches is a set in the
 * prefix's slot, written after the watch itself.
 */
import { notFound } from '../../core/errors.js';
import { emptySoonStep, forecastFrom, type Forecast, type ForecastBackend } from '../../core/forecast.js';
import { poolKeys, saleKey } from './keys.js';
import type { RedisSales } from './sales.js';
import { runScript, type RedisClient } from './scripts.js';

interface Snapshot {
  now: number;
  remaining?: number | null;
  w: [number, number][];
  watch?: { within: number; armed: number; fired: number };
}

/** How often one check re-reads a watch whose state moved under it (another checker won). */
const MAX_STEP_ROUNDS = 5;

export class RedisForecasts implements ForecastBackend {
  constructor(
    private readonly client: RedisClient,
    private readonly prefix: string,
    private readonly sales: RedisSales,
  ) {}

  private get watchList(): string {
    return `{${this.prefix}}:watches`;
  }

  async read(kind: Forecast['kind'], subject: string): Promise<Forecast> {
    return toForecast(kind, subject, await this.snapshot(kind, subject));
  }

  async watch(kind: Forecast['kind'], subject: string, withinMs: number | null): Promise<void> {
    await this.snapshot(kind, subject); // not_found for an unknown pool/sale
    const { watch, events } = await this.keys(kind, subject);
    const member = `${kind}|${subject}`;
    if (withinMs === null) {
      await runScript(this.client, 'forecast_step', [watch, events], ['clear']);
      await this.client.srem(this.watchList, member);
    } else {
      await runScript(this.client, 'forecast_step', [watch, events], ['set', withinMs]);
      await this.client.sadd(this.watchList, member);
    }
  }

  async checkWatches(): Promise<Forecast[]> {
    const fired: Forecast[] = [];
    for (const member of (await this.client.smembers(this.watchList)).sort()) {
      const at = member.indexOf('|');
      const kind = member.slice(0, at) as Forecast['kind'];
      const subject = member.slice(at + 1);
      for (let round = 0; round < MAX_STEP_ROUNDS; round++) {
        let snap: Snapshot;
        let keys: { watch: string; events: string };
        try {
          snap = await this.snapshot(kind, subject);
          keys = await this.keys(kind, subject);
        } catch {
          break; // the pool/sale is gone; its watch is harmless
        }
        if (!snap.watch) break;
        const forecast = toForecast(kind, subject, snap);
        const w = snap.watch;
        const step = emptySoonStep(w.armed === 1, forecast.timeToEmptyMs, w.within);
        if (!step.fire && (step.armed ? 1 : 0) === w.armed) break;
        const count = w.fired + 1;
        const payload = JSON.stringify({ [kind]: subject, ...forecast, withinMs: w.within });
        const applied = await runScript(
          this.client,
          'forecast_step',
          [keys.watch, keys.events],
          [
            'step',
            w.armed,
            w.fired,
            step.armed ? 1 : 0,
            step.fire ? '1' : '0',
            `${kind}.empty_soon`,
            `${kind}.empty_soon:${subject}:${count}`,
            payload,
          ],
        );
        if (Number(applied) === 1) {
          if (step.fire) fired.push(forecast);
          break;
        }
      }
    }
    return fired;
  }

  private async keys(kind: Forecast['kind'], subject: string): Promise<{ watch: string; events: string }> {
    if (kind === 'pool') {
      const k = poolKeys(this.prefix, subject);
      return { watch: k.watch, events: k.events };
    }
    const tag = await this.sales.saleTagOf(subject);
    return { watch: saleKey(tag, 'watch', subject), events: saleKey(tag, 'events', subject) };
  }

  private async snapshot(kind: Forecast['kind'], subject: string): Promise<Snapshot> {
    let raw: unknown;
    if (kind === 'pool') {
      const k = poolKeys(this.prefix, subject);
      raw = await runScript(this.client, 'forecast_pool', [k.pool, k.claimed, k.watch], []);
    } else {
      const tag = await this.sales.saleTagOf(subject);
      raw = await runScript(this.client, 'sale_forecast', [saleKey(tag, 'sale', subject)], [tag, subject]);
    }
    if (raw === 'not_found') throw notFound(kind, subject);
    return JSON.parse(raw as string) as Snapshot;
  }
}

function toForecast(kind: Forecast['kind'], subject: string, snap: Snapshot): Forecast {
  const windows = snap.w.map(([taken, first]) => ({ taken, spanMs: first < 0 ? 0 : snap.now - first }));
  return forecastFrom({
    kind,
    subject,
    windows,
    remaining: snap.remaining ?? null,
    at: new Date(snap.now).toISOString(),
  });
}
