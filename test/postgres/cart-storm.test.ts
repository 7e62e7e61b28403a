/** The multi-process cart storm on PostgreSQL (support/cart-storm-suite.ts): 4 processes with their own pools. */
import { cartStormSuite } from '../support/cart-storm-suite.js';
import { pgForSuite, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

if (skip) {
  const { it } = await import('node:test');
  it('postgres cart storm', { skip }, () => {});
} else {
  cartStormSuite('postgres', pgForSuite({ poolSize: '6' }));
}
