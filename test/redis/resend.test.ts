/**
 * ioredis re-sends a script that was in flight when its connection dropped
 * (`autoResendUnfulfilledCommands`): the store may run the same request twice. Here the first run's
 * reply is lost on purpose — the proxy holds the replies, the store acts, the connection is reset —
 * so the client re-sends; every step must answer the re-send as what the first run did, and the
 * sale's counters must still equal its orders.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { setTimeout as sleep } from 'node:timers/promises';
import { openDibs, type Dibs } from '../../src/index.js';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js';
import { deletePrefix, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';

const available = await sharedRedisAvailable();

describe('redis: a script re-sent after its reply was lost', { skip: !available }, () => {
  let proxy: FaultProxy;
  let dibs: Dibs;
  const prefix = testPrefix();

  before(async () => {
    const target = new URL(SHARED_REDIS);
    proxy = await startFaultProxy({ host: target.hostname, port: Number(target.port || 6379) });
    dibs = await openDibs(`redis://${proxy.host}:${proxy.port}/0?prefix=${prefix}&commandTimeoutMs=10000`);
  });

  after(async () => {
    await dibs?.close();
    await proxy?.close();
    await deletePrefix(SHARED_REDIS, prefix);
  });

  /** Runs `step` with its reply lost: the store acts, the connection is reset, ioredis re-sends. */
  async function withLostReply<T>(step: () => Promise<T>): Promise<T> {
    const held = proxy.holdReplies(1_500);
    const answer = step();
    await sleep(300); // the request has reached the store and run; its reply waits in the proxy
    proxy.reset();
    const result = await answer;
    await held;
    return result;
  }

  it('an unkeyed buy re-sent is one order: sold and the customer’s units equal the orders', async () => {
    const sale = await dibs.sales.create({
      sku: 'RESEND',
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      cap: 10,
      perCustomerLimit: 3,
    });
    const resetsBefore = proxy.stats.resets;
    const { order, replayed } = await withLostReply(() => dibs.sales.buy(sale.id, 'ann', 1));
    assert.ok(proxy.stats.resets > resetsBefore, 'the connection was reset while the reply was held');
    assert.equal(order.quantity, 1);
    assert.equal(replayed, false, 'the caller asked once: the answer is the first one');
    assert.deepEqual(await dibs.sales.audit(sale.id), []);
    const { sold } = (await dibs.sales.get(sale.id)).stats;
    assert.equal(sold, 1, `one acknowledged buy of 1 unit, the sale says sold ${sold}`);
    // ann may still buy the 2 units her limit of 3 leaves: the re-send did not count twice
    await dibs.sales.buy(sale.id, 'ann', 2);
  });

  it('an unkeyed cart re-sent is answered as held (one cart), not refused line by line', async () => {
    const sale = (sku: string) =>
      dibs.sales.create({
        sku: `{resend}${sku}`,
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + 3_600_000).toISOString(),
        cap: 5,
        perCustomerLimit: 2,
      });
    const [tee, mug] = [await sale('tee'), await sale('mug')];
    const lines = [
      { sale: tee.id, quantity: 2 },
      { sale: mug.id, quantity: 1 },
    ];
    const { cart, replayed } = await withLostReply(() =>
      dibs.sales.holdCart({ customer: 'bea', lines, ttlMs: 60_000 }),
    );
    assert.equal(replayed, false, 'the caller asked once: the answer is the first one');
    assert.equal(cart.lines.length, 2);
    assert.equal((await dibs.sales.getCart(cart.id)).status, 'active');
    assert.deepEqual([(await dibs.sales.get(tee.id)).stats.held, (await dibs.sales.get(mug.id)).stats.held], [2, 1]);
    assert.deepEqual([...(await dibs.sales.audit(tee.id)), ...(await dibs.sales.audit(mug.id))], []);
  });
});
