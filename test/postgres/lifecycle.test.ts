import { lifecycleConformance } from '../conformance/lifecycle.js';
import { openTempPg, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

if (skip) {
  const { it } = await import('node:test');
  it('postgres lifecycle conformance', { skip }, () => {});
} else {
  lifecycleConformance('postgres', () => openTempPg());
}
