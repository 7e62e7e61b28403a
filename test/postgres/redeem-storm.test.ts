import { pgForSuite, requirePostgres } from '../support/postgres.js';
import { redeemStormSuite } from '../support/redeem-storm.js';

const skip = await requirePostgres();

if (skip) {
  const { it } = await import('node:test');
  it('postgres redemption storm', { skip }, () => {});
} else {
  redeemStormSuite('postgres', pgForSuite({ poolSize: '4' }));
}
