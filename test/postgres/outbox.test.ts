import { outboxConformance } from '../conformance/outbox.js';
import { openTempPg, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

if (skip) {
  const { it } = await import('node:test');
  it('postgres outbox conformance', { skip }, () => {});
} else {
  outboxConformance('postgres', () => openTempPg({ poolSize: '4' }));
}
