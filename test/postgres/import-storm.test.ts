/**
 * Imports racing on PostgreSQL: 3 processes (each with parallel COPY batches) import overlapping
 * code lists into one pool; batches that meet a code already there take the ON CONFLICT path.
 */
import { describe } from 'node:test';
import { importStormCases } from '../support/import-storm.js';
import { pgForSuite, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

describe('postgres: import storm', { skip }, () => {
  const suite = pgForSuite({ poolSize: '4' });
  importStormCases(() => suite);
});
