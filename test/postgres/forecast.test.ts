import { forecastConformance } from '../conformance/forecast.js';
import { pgForSuite, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

if (skip) {
  const { it } = await import('node:test');
  it('postgres forecasts', { skip }, () => {});
} else {
  forecastConformance('postgres', pgForSuite());
}
