import { pgForSuite, requirePostgres } from '../support/postgres.js';
import { parkedStormSuite } from '../support/parked-storm.js';

const skip = await requirePostgres();

if (skip) {
  const { it } = await import('node:test');
  it('postgres parked-codes storm', { skip }, () => {});
} else {
  parkedStormSuite('postgres', pgForSuite({ poolSize: '4' }));
}
