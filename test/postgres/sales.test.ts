import { cartConformance } from '../conformance/carts.js';
import { postgresCartTamper } from '../support/cart-tamper.js';
import { saleConformance } from '../conformance/sales.js';
import { openTempPg, requirePostgres } from '../support/postgres.js';

const skip = await requirePostgres();

if (skip) {
  const { it } = await import('node:test');
  it('postgres sale conformance', { skip }, () => {});
} else {
  saleConformance('postgres', () => openTempPg());
  cartConformance('postgres', () => openTempPg(), postgresCartTamper);
}
