import { after, before } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { redeemStormSuite } from '../support/redeem-storm.js';
import { deletePrefix, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';

if (!(await sharedRedisAvailable())) {
  const { it } = await import('node:test');
  it('redis redemption storm', { skip: 'redis on 127.0.0.1:6379 is not reachable' }, () => {});
} else {
  const prefix = testPrefix();
  const store = `${SHARED_REDIS}?prefix=${prefix}`;
  let dibs: Dibs;
  before(async () => {
    dibs = await openDibs(store);
  });
  after(async () => {
    await dibs?.close();
    await deletePrefix(SHARED_REDIS, prefix);
  });
  redeemStormSuite('redis', {
    get dibs() {
      return dibs;
    },
    store,
  });
}
