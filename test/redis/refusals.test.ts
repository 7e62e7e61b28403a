/**
 * Refusals of Redis's definition steps (pool and sale create and update, multi-use code add),
 * which the scripts answer by reason id: each equals the one factory's, whole.
 */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { refusal } from '../../src/core/refusals.js';
import { type DibsError, isDibsError, openDibs } from '../../src/index.js';
import { deletePrefix, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';

const shape = (e: DibsError) => ({
  code: e.code,
  message: e.message,
  field: e.field,
  retriable: e.retriable,
  details: e.details,
});
const fail = async (p: Promise<unknown>) => {
  try {
    await p;
  } catch (error) {
    assert.ok(isDibsError(error), String(error));
    return shape(error);
  }
  assert.fail('expected a refusal');
};

it('redis definition steps refuse with the refusal the factory builds, whole', {
  skip: !(await sharedRedisAvailable()),
}, async () => {
  const prefix = testPrefix();
  const dibs = await openDibs(`${SHARED_REDIS}?prefix=${prefix}`);
  try {
    await dibs.pools.create({ name: 'p1' });
    assert.deepEqual(await fail(dibs.pools.create({ name: 'p1' })), shape(refusal('pool_exists', { pool: 'p1' })));
    await dibs.pools.addMultiUseCode('p1', { code: 'M1', uses: 3 });
    assert.deepEqual(
      await fail(dibs.pools.addMultiUseCode('p1', { code: 'M1', uses: 3 })),
      shape(refusal('code_exists', { code: 'M1' })),
    );
    await dibs.pools.update('p1', { perClaimantLimit: 3 });
    await dibs.pools.importCodes('p1', ['A', 'B', 'C']);
    await dibs.pools.claimMany('p1', 'ann', 2);
    assert.deepEqual(
      await fail(dibs.pools.update('p1', { perClaimantLimit: 1 })),
      shape(refusal('limit_below_holdings', { requested: 1, held: 2 })),
    );
    const s = await dibs.sales.create({
      sku: 'X',
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 3600e3).toISOString(),
      cap: 5,
      perCustomerLimit: 3,
    });
    await dibs.sales.buy(s.id, 'bob', 3);
    assert.deepEqual(
      await fail(dibs.sales.update(s.id, { perCustomerLimit: 1 })),
      shape(refusal('sale_limit_below_units', { sale: s.id, requested: 1, units: 3 })),
    );
    await dibs.sales.cancel(s.id);
    assert.deepEqual(
      await fail(dibs.sales.update(s.id, { perCustomerLimit: 3 })),
      shape(refusal('sale_cancelled', { sale: s.id })),
    );
  } finally {
    await dibs.close();
    await deletePrefix(SHARED_REDIS, prefix).catch(() => {});
  }
});
