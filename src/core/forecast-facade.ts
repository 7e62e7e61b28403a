/** `dibs.forecasts`: burn rate, time to empty and "empty soon" alerts for pools and sales. */
import { z } from 'zod';
import { DibsError } from './errors.js';
import type { Forecast, ForecastBackend } from './forecast.js';
import { saleIdSchema } from './sales/schemas.js';
import { poolNameSchema } from './schemas.js';
import { parseInput } from './validate.js';

/** `withinMs` of an empty-soon alert; null stops watching. */
export const withinSchema = z
  .number({ error: 'must be a number' })
  .int('must be a whole number')
  .min(1000, 'at least 1000 ms')
  .max(30 * 86_400_000, 'at most 30 days')
  .nullable();

export class Forecasts {
  constructor(
    private readonly backend: ForecastBackend | undefined,
    private readonly kind: string,
  ) {}

  private get store(): ForecastBackend {
    if (!this.backend)
      throw new DibsError('unsupported', `the ${this.kind} store does not support forecasts yet`, { field: 'store' });
    return this.backend;
  }

  pool(name: string): Promise<Forecast> {
    return this.store.read('pool', parseInput(poolNameSchema, name, 'pool'));
  }

  sale(id: string): Promise<Forecast> {
    return this.store.read('sale', parseInput(saleIdSchema, id, 'sale'));
  }

  /** Fire a `pool.empty_soon` event (once per crossing) when the pool is predicted empty within `withinMs`; null stops. */
  watchPool(name: string, withinMs: number | null): Promise<void> {
    return this.store.watch(
      'pool',
      parseInput(poolNameSchema, name, 'pool'),
      parseInput(withinSchema, withinMs, 'withinMs'),
    );
  }

  /** The same for a sale (`sale.empty_soon`); held units count as gone. */
  watchSale(id: string, withinMs: number | null): Promise<void> {
    return this.store.watch(
      'sale',
      parseInput(saleIdSchema, id, 'sale'),
      parseInput(withinSchema, withinMs, 'withinMs'),
    );
  }

  /** The alert job: advances every watch; returns the forecasts whose alert fired now. */
  checkWatches(): Promise<Forecast[]> {
    return this.store.checkWatches();
  }
}
