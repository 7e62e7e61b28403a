/**
 * Multi-process flash-sale storms on PostgreSQL (the suite is in support/sale-storm-suite.ts):
 * 4 processes with their own connection pools against one schema.
 */
import { jobRaceSuite } from '../support/job-race.js';
import { saleStormSuite } from '../support/sale-storm-suite.js';
import { pgForSuite, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

if (skip) {
  const { it } = await import('node:test');
  it('postgres sale storms', { skip }, () => {});
} else {
  // 4 processes × 8 connections: enough for every worker's 8 concurrent buyers, well inside max_connections.
  saleStormSuite('postgres', pgForSuite({ poolSize: '8' }));
  jobRaceSuite('postgres', pgForSuite({ poolSize: '4' }));
}
