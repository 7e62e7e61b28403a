/** The fair-start storm (support/fair-start-storm.ts) on PostgreSQL: 4 processes, one schema. */
import { fairStartStormSuite } from '../support/fair-start-storm.js';
import { pgForSuite, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

if (skip) {
  const { it } = await import('node:test');
  it('postgres fair-start storm', { skip }, () => {});
} else {
  fairStartStormSuite('postgres', pgForSuite({ poolSize: '8' }));
}
