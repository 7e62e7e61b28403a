/** Imports racing on one SQLite file: 3 processes import overlapping code lists into one pool. */
import { describe } from 'node:test';
import { importStormCases } from '../support/import-storm.js';
import { sqliteForSuite } from '../support/sqlite.js';

describe('sqlite: import storm', () => {
  const temp = sqliteForSuite();
  importStormCases(() => temp);
});
