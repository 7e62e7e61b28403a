import { poolConformance } from '../conformance/pools.js';
import { openTempPg, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

if (skip) {
  const { it } = await import('node:test');
  it('postgres conformance', { skip }, () => {});
} else {
  poolConformance('postgres (grouped claims)', () => openTempPg());
  poolConformance('postgres (single claims)', () => openTempPg({ grouped: 'false' }));
}
