/** The fair-start storm (support/fair-start-storm.ts) on PostgreSQL: 4 processes, one schema. */
import { fairStartStormSuite } from '../support/fair-start-storm.js';
import { pgForSuite, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

if (skip) {
  const { it } = await import('node:test');
  it('postgres fair-start storm', { skip }, () => {});
} else {
  // every step queues on the sale row: 400 early shoppers fit the default suite; FAULTS_LONG=1 runs 5,000
  fairStartStormSuite(
    'postgres',
    pgForSuite({ poolSize: '8' }),
    process.env.FAULTS_LONG === '1'
      ? { pre: 5000, late: 400, cap: 200, processes: 4 }
      : { pre: 400, late: 40, cap: 30, processes: 4 },
  );
}
