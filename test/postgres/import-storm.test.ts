/**
 * Imports racing on PostgreSQL: 3 processes (each with parallel COPY batches) import overlapping
 * code lists into one pool; batches that meet a code already there take the ON CONFLICT path.
 */
import { after, before, describe } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { importStormCases } from '../support/import-storm.js';
import { requirePostgres, tempPgStore } from '../support/postgres.js';

const skip = await requirePostgres();

describe('postgres: import storm', { skip }, () => {
  const temp = tempPgStore({ poolSize: '4' });
  let dibs: Dibs;
  before(async () => {
    dibs = await openDibs(temp.store);
  });
  after(async () => {
    await dibs?.close();
    await temp.drop();
  });
  importStormCases(() => ({ dibs, store: temp.store }));
});
