import { serviceStoreConformance } from '../conformance/service-store.js';
import { openTempPg, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

if (skip) {
  const { it } = await import('node:test');
  it('postgres service store', { skip }, () => {});
} else {
  serviceStoreConformance('postgres', () => openTempPg());
}
