/** Rate limits on PostgreSQL: the conformance suite unchanged and the multi-process storm. */
import { it } from 'node:test';
import { limitConformance } from '../conformance/limits.js';
import { openTempPg, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

if (skip) {
  it('postgres limits', { skip }, () => {});
} else {
  limitConformance('postgres', () => openTempPg({ poolSize: '4' }));
}
