/**
 * Admin changes racing a claim / buy / reserve storm on PostgreSQL (I8; the suite is in
 * support/admin-storm-suite.ts): 4 processes with their own connection pools against one schema.
 */
import { adminStormSuite } from '../support/admin-storm-suite.js';
import { pgForSuite, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

if (skip) {
  const { it } = await import('node:test');
  it('postgres admin storms', { skip }, () => {});
} else {
  adminStormSuite('postgres', pgForSuite({ poolSize: '8' }));
}
