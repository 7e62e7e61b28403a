/**
 * Forecasts on SQLite: the counts come from indexed time ranges of claims/orders in one read;
 * an alert check reads, decides and records its outbox event inside one write transaction, so
 * several processes running the job never fire one crossing twice.
 */
import { notFound } from '../../core/errors.js';
import { emptySoonStep, forecastFrom, type Forecast, type ForecastBackend } from '../../core/forecast.js';
import { loadQueries } from '../shared/sql-files.js';
import { prepareAll, read, write, type Db, type SqliteOptions, type Statements } from './database.js';

const Q = loadQueries(new URL('./forecast.sql', import.meta.url), [
  'poolTaken',
  'saleTaken',
  'upsertWatch',
  'deleteWatch',
  'watches',
  'setWatch',
  'insertPoolEvent',
  'insertSaleEvent',
]);

interface WatchRow {
  kind: Forecast['kind'];
  subject: string;
  within_ms: number;
  armed: number;
  fired: number;
}

export class SqliteForecasts implements ForecastBackend {
  private readonly stmt: Statements<typeof Q>;

  constructor(
    private readonly db: Db,
    private readonly options: SqliteOptions,
  ) {
    this.stmt = prepareAll(db, Q);
  }

  read(kind: Forecast['kind'], subject: string): Promise<Forecast> {
    return read(this.options, () => this.db.transaction(() => this.forecast(kind, subject))());
  }

  async watch(kind: Forecast['kind'], subject: string, withinMs: number | null): Promise<void> {
    await write(this.db, this.options, () => {
      this.forecast(kind, subject); // not_found for an unknown pool/sale
      if (withinMs === null) this.stmt.deleteWatch.run({ kind, subject });
      else this.stmt.upsertWatch.run({ kind, subject, withinMs });
    });
  }

  checkWatches(): Promise<Forecast[]> {
    return write(this.db, this.options, () => {
      const fired: Forecast[] = [];
      for (const w of this.stmt.watches.all() as WatchRow[]) {
        let forecast: Forecast;
        try {
          forecast = this.forecast(w.kind, w.subject);
        } catch {
          continue; // the pool/sale was deleted; its watch is harmless
        }
        const step = emptySoonStep(w.armed === 1, forecast.timeToEmptyMs, w.within_ms);
        const count = w.fired + (step.fire ? 1 : 0);
        if (step.fire) {
          const insert = w.kind === 'pool' ? this.stmt.insertPoolEvent : this.stmt.insertSaleEvent;
          insert.run({
            type: `${w.kind}.empty_soon`,
            key: `${w.kind}.empty_soon:${w.subject}:${count}`,
            subject: w.subject,
            payload: JSON.stringify({ [w.kind]: w.subject, ...forecast, withinMs: w.within_ms }),
            now: forecast.at,
          });
          fired.push(forecast);
        }
        if (step.fire || (step.armed ? 1 : 0) !== w.armed)
          this.stmt.setWatch.run({ kind: w.kind, subject: w.subject, armed: step.armed ? 1 : 0, fired: count });
      }
      return fired;
    });
  }

  private forecast(kind: Forecast['kind'], subject: string): Forecast {
    type Row = {
      remaining: number | null;
      now: string;
      w1: number;
      f1: string | null;
      w5: number;
      f5: string | null;
      w15: number;
      f15: string | null;
    };
    const row = (kind === 'pool' ? this.stmt.poolTaken : this.stmt.saleTaken).get({ subject }) as Row | undefined;
    if (!row) throw notFound(kind, subject);
    const at = Date.parse(row.now);
    const span = (first: string | null) => (first === null ? 0 : at - Date.parse(first));
    const windows = [
      { taken: row.w1, spanMs: span(row.f1) },
      { taken: row.w5, spanMs: span(row.f5) },
      { taken: row.w15, spanMs: span(row.f15) },
    ];
    return forecastFrom({ kind, subject, windows, remaining: row.remaining, at: row.now });
  }
}
