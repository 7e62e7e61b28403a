/**
 * Forecasts on PostgreSQL: the counts come from indexed time ranges of claims/orders in one
 * statement; an alert check locks the watches, reads, decides and records its outbox events in
 * one transaction, so several processes running the job never fire one crossing twice.
 */
import type pg from 'pg';
import { notFound } from '../../core/errors.js';
import { emptySoonStep, forecastFrom, type Forecast, type ForecastBackend } from '../../core/forecast.js';
import { loadQueries } from '../shared/sql-files.js';
import { query, withTransaction } from './connection.js';

const Q = loadQueries(new URL('./forecast.sql', import.meta.url), [
  'poolTaken',
  'saleTaken',
  'upsertWatch',
  'deleteWatch',
  'lockWatches',
  'setWatch',
  'insertEvent',
]);

interface WatchRow {
  kind: Forecast['kind'];
  subject: string;
  within_ms: string;
  armed: boolean;
  fired: number;
}

type TakenRow = {
  remaining: string | number | null;
  now: Date;
  w1: number;
  f1: Date | null;
  w5: number;
  f5: Date | null;
  w15: number;
  f15: Date | null;
};

export class PgForecasts implements ForecastBackend {
  constructor(private readonly pool: pg.Pool) {}

  read(kind: Forecast['kind'], subject: string): Promise<Forecast> {
    return this.forecast(this.pool, kind, subject);
  }

  async watch(kind: Forecast['kind'], subject: string, withinMs: number | null): Promise<void> {
    await this.forecast(this.pool, kind, subject); // not_found for an unknown pool/sale
    if (withinMs === null) await query(this.pool, Q.deleteWatch, [kind, subject]);
    else await query(this.pool, Q.upsertWatch, [kind, subject, withinMs]);
  }

  checkWatches(): Promise<Forecast[]> {
    return withTransaction(this.pool, async (client) => {
      const fired: Forecast[] = [];
      for (const w of (await client.query<WatchRow>(Q.lockWatches)).rows) {
        let forecast: Forecast;
        try {
          forecast = await this.forecast(client, w.kind, w.subject);
        } catch {
          continue; // the pool/sale was deleted; its watch is harmless
        }
        const withinMs = Number(w.within_ms);
        const step = emptySoonStep(w.armed, forecast.timeToEmptyMs, withinMs);
        const count = w.fired + (step.fire ? 1 : 0);
        if (step.fire) {
          const payload = JSON.stringify({ [w.kind]: w.subject, ...forecast, withinMs });
          await client.query(Q.insertEvent, [
            `${w.kind}.empty_soon`,
            `${w.kind}.empty_soon:${w.subject}:${count}`,
            w.kind === 'pool' ? w.subject : null,
            w.kind === 'sale' ? w.subject : null,
            payload,
          ]);
          fired.push(forecast);
        }
        if (step.fire || step.armed !== w.armed) await client.query(Q.setWatch, [w.kind, w.subject, step.armed, count]);
      }
      return fired;
    });
  }

  private async forecast(db: pg.Pool | pg.ClientBase, kind: Forecast['kind'], subject: string): Promise<Forecast> {
    const text = kind === 'pool' ? Q.poolTaken : Q.saleTaken;
    const row = (
      db === this.pool ? await query<TakenRow>(this.pool, text, [subject]) : await db.query<TakenRow>(text, [subject])
    ).rows[0];
    if (!row) throw notFound(kind, subject);
    const at = row.now.getTime();
    const span = (first: Date | null) => (first === null ? 0 : at - first.getTime());
    const windows = [
      { taken: row.w1, spanMs: span(row.f1) },
      { taken: row.w5, spanMs: span(row.f5) },
      { taken: row.w15, spanMs: span(row.f15) },
    ];
    return forecastFrom({
      kind,
      subject,
      windows,
      remaining: row.remaining === null ? null : Number(row.remaining),
      at: row.now.toISOString(),
    });
  }
}
