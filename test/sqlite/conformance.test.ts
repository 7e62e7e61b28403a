import { poolConformance } from '../conformance/pools.js';
import { openDibs } from '../../src/index.js';
import { openTempSqlite } from '../support/sqlite.js';

poolConformance('sqlite (file)', openTempSqlite);

poolConformance('sqlite (:memory:)', async () => {
  const dibs = await openDibs('sqlite::memory:');
  return { dibs, cleanup: () => dibs.close() };
});
