/**
 * ioredis re-sends a script that was in flight when its connection dropped
 * (`autoResendUnfulfilledCommands`): the store may run the same request twice. Here the first run's
 * reply is lost on purpose — the proxy holds the replies, the store acts, the connection is reset —
 * so the client re-sends; every step must answer the re-send as what the first run did, and the
 * sale's counters must still equal its orders.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { randomUUID } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { Redis } from 'ioredis';
import { openDibs, type Dibs } from '../../src/index.js';
import { outboxKeys, poolKeys, saleTag } from '../../src/backends/redis/keys.js';
import { newId } from '../../src/core/ids.js';
import { REPLAY_MS, replayKey, requestId } from '../../src/backends/redis/resend.js';
import { loadScripts, runScript, SCRIPT_NAMES } from '../../src/backends/redis/scripts.js';
import { startFaultProxy, type FaultProxy } from '../support/fault-proxy.js';
import { deletePrefix, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';

const available = await sharedRedisAvailable();

describe('redis: a script re-sent after its reply was lost', { skip: !available }, () => {
  let proxy: FaultProxy;
  let dibs: Dibs;
  /** A plain client through the proxy, for a script the facade reaches only after another answered. */
  let raw: Redis;
  const prefix = testPrefix();

  before(async () => {
    const target = new URL(SHARED_REDIS);
    proxy = await startFaultProxy({ host: target.hostname, port: Number(target.port || 6379) });
    dibs = await openDibs(`redis://${proxy.host}:${proxy.port}/0?prefix=${prefix}&commandTimeoutMs=10000`);
    raw = new Redis({ host: proxy.host, port: proxy.port, maxRetriesPerRequest: 2 });
    raw.on('error', () => {});
    // every script cached on the server first: a script's first EVALSHA answers NOSCRIPT, and a
    // lost NOSCRIPT would make the client send the script once, after the window, not run it twice
    const scripts = loadScripts(new URL('../../src/backends/redis/scripts/', import.meta.url), SCRIPT_NAMES);
    for (const script of Object.values(scripts)) await raw.script('LOAD', script.source);
  });

  after(async () => {
    await dibs?.close();
    raw?.disconnect();
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

  it('a counter increment and a rate-limit take re-sent count once', async () => {
    const limit = await dibs.limits.create({
      name: `${prefix}-sw`,
      algorithm: 'sliding-window',
      limit: 2,
      periodMs: 600_000,
      segments: 10,
    });
    const [counted, taken] = await withLostReply(() =>
      Promise.all([dibs.counters.incr('resend-c', 5), dibs.limits.take(limit.name, 1, { key: 'ann' })]),
    );
    // the counter equals the acknowledged increments
    assert.equal(counted.value, 5, 'the answer is the first run’s total');
    assert.equal((await dibs.counters.get('resend-c')).value, 5, 'one acknowledged +5, the counter says more');
    assert.equal((await dibs.counters.incr('resend-c', 1)).value, 6);
    // the limit took once: the second of 2 allowed requests still fits
    assert.equal(taken.allowed, true);
    assert.equal(taken.remaining, 1, 'the answer is the first run’s decision');
    const second = await dibs.limits.take(limit.name, 1, { key: 'ann' });
    assert.equal(second.allowed, true, 'the second of 2 allowed requests was denied: the re-send took twice');
  });

  it('a lock acquire re-sent answers the grant (plain and fair), not a lock held by its own token', async () => {
    const [plain, fair] = await withLostReply(() =>
      Promise.all([
        dibs.locks.tryAcquire('resend-lock', { ttlMs: 60_000 }),
        dibs.locks.tryAcquire('resend-fair', { ttlMs: 60_000, fair: true }),
      ]),
    );
    assert.ok(plain, 'the re-sent acquire answered "taken" while its own token held the lock');
    assert.ok(fair, 'the re-sent fair acquire answered "taken" while its own token held the lock');
    const info = await dibs.locks.inspect('resend-lock');
    assert.equal(info.holders.length, 1);
    assert.equal(info.holders[0]!.fence, plain.fence, 'the lease answered is the one the store holds');
    await dibs.locks.release(fair);
    // a lock release re-sent answers done, not not_owner
    await withLostReply(() => dibs.locks.release(plain));
    assert.equal((await dibs.locks.inspect('resend-lock')).holders.length, 0);
  });

  it('redeem, release, revoke, unredeem and a multi-use refund re-sent answer as their first run', async () => {
    await dibs.pools.create({ name: 'resend-p', perClaimantLimit: 5 });
    await dibs.pools.importCodes('resend-p', ['A', 'B', 'C', 'D']);
    await dibs.pools.claimMany('resend-p', 'ann', 4);
    await dibs.pools.redeem('resend-p', 'D', { orderId: 'o-d' });
    await dibs.pools.addMultiUseCode('resend-p', { code: 'M', uses: 5 });
    await dibs.pools.redeem('resend-p', 'M', { claimant: 'bob', orderId: 'o-m' });
    const k = poolKeys(prefix, 'resend-p');
    const nonce = randomUUID();
    const results = await withLostReply(() =>
      Promise.allSettled([
        dibs.pools.redeem('resend-p', 'A'),
        dibs.pools.release('resend-p', 'B'),
        dibs.pools.revoke('resend-p', 'C'),
        dibs.pools.unredeem('resend-p', 'D'),
        // the facade reaches multi_unredeem only once the single-use script answered not_found (an
        // answer this window would hold instead): the refund is sent here as the backend sends it
        runScript(
          raw,
          'multi_unredeem',
          [k.pool, k.multi, k.uses, k.usesBy, k.events, replayKey(k.pool, nonce)],
          ['M', 'o-m', nonce, REPLAY_MS],
        ).then((reply) => {
          if ((reply as string[])[0] !== 'ok') throw new Error(`answered ${JSON.stringify(reply)}`);
          return { status: 'multi' };
        }),
      ]),
    );
    const named = ['redeem A', 'release B', 'revoke C', 'unredeem D', 'multi_unredeem M'];
    const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [`${named[i]}: ${String(r.reason)}`] : []));
    assert.deepEqual(failed, [], 'every step acted once; its re-send must answer as the first run');
    const statuses = results.map((r) => (r.status === 'fulfilled' ? (r.value as { status?: string }).status : null));
    assert.deepEqual(statuses.slice(0, 4), ['redeemed', 'free', 'revoked', 'claimed']);
    const stats = await dibs.pools.stats('resend-p');
    assert.deepEqual(
      { free: stats.free, claimed: stats.claimed, redeemed: stats.redeemed, revoked: stats.revoked },
      { free: 1, claimed: 1, redeemed: 1, revoked: 1 },
    );
  });

  it('an unkeyed claim under a limit above one re-sent takes one code, answered as claimed', async () => {
    await dibs.pools.create({ name: 'resend-c', perClaimantLimit: 3 });
    await dibs.pools.importCodes('resend-c', ['X', 'Y', 'Z']);
    await dibs.pools.claim('resend-c', 'ann'); // ann holds one already: the re-send must not add to it
    const claim = await withLostReply(() => dibs.pools.claim('resend-c', 'ann'));
    assert.equal(claim.status, 'claimed');
    assert.equal(claim.held.length, 2, `one acknowledged claim of 1 after 1, ann holds ${claim.held.join(', ')}`);
    assert.equal(claim.code, claim.held[1], 'the answer names the code this claim took');
    assert.equal((await dibs.pools.stats('resend-c')).claimed, 2);
  });

  it('creating a pool, importing codes, adding a multi-use code and unwishing re-sent answer as their first run', async () => {
    await dibs.pools.create({ name: 'resend-i' });
    await dibs.sales.wish('RESEND-W', 'ann', { email: 'ann@example.com' });
    // an event to settle: a refund records code.unredeemed in the pool's stream
    await dibs.pools.importCodes('resend-i', ['E']);
    await dibs.pools.claim('resend-i', 'eve');
    await dibs.pools.redeem('resend-i', 'E', { orderId: 'o-e' });
    await dibs.pools.unredeem('resend-i', 'E');
    const outbox = outboxKeys(poolKeys(prefix, 'resend-i').events);
    const [event] = (await runScript(raw, 'outbox_peek', outbox, [1])) as string[];
    assert.ok(event, 'the refund recorded an event');
    const results = await withLostReply(() =>
      Promise.allSettled([
        dibs.pools.create({ name: 'resend-new' }),
        dibs.pools.importCodes('resend-i', ['I1', 'I2']),
        dibs.pools.addMultiUseCode('resend-i', { code: 'MU', uses: 3 }),
        dibs.sales.unwish('RESEND-W', 'ann'),
        // a failed delivery attempt, as the dispatcher settles it (outbox.ts)
        runScript(raw, 'outbox_settle', outbox, [event!, 'fail', 'receiver down', 60_000, requestId()]),
      ]),
    );
    const named = ['create pool', 'import', 'add multi-use code', 'unwish', 'settle'];
    const failed = results.flatMap((r, i) => (r.status === 'rejected' ? [`${named[i]}: ${String(r.reason)}`] : []));
    assert.deepEqual(failed, [], 'every step acted once; its re-send must answer as the first run');
    const imported = (results[1] as PromiseFulfilledResult<{ imported: number; duplicates: number }>).value;
    assert.deepEqual(
      { imported: imported.imported, duplicates: imported.duplicates },
      { imported: 2, duplicates: 0 },
      'two new codes imported once, answered as duplicates',
    );
    assert.equal(await raw.hget(outbox[3], `a:${event}`), '1', 'one failed attempt, counted more than once');
  });
  it('an unkeyed cart re-sent is answered as held (one cart), not refused line by line; its confirm and a cancel re-sent answer as their first run', async () => {
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
    // the facade reads the cart before it confirms (an answer this window would hold instead): the
    // confirm is sent here as the backend sends it
    const tag = saleTag(prefix, /^cart_([0-9a-f]{4})/.exec(cart.id)![1]!);
    const confirmed = (await withLostReply(() =>
      runScript(raw, 'cart_confirm', [`${tag}:carts`], [tag, cart.id, newId('ord'), newId('ord')]),
    )) as string[];
    assert.equal(confirmed[0], 'ok', 'the caller confirmed once: the answer is the first one');
    assert.equal((JSON.parse(confirmed[2]!) as unknown[]).length, 2);
    assert.equal((await dibs.sales.confirmCart(cart.id)).replayed, true, 'a second confirm is a replay');
    assert.deepEqual([(await dibs.sales.get(tee.id)).stats.sold, (await dibs.sales.get(mug.id)).stats.sold], [2, 1]);
    const other = (await dibs.sales.holdCart({ customer: 'cy', lines, ttlMs: 60_000 })).cart;
    assert.equal((await withLostReply(() => dibs.sales.cancelCart(other.id))).status, 'cancelled');
    assert.deepEqual([(await dibs.sales.get(tee.id)).stats.held, (await dibs.sales.get(mug.id)).stats.held], [0, 0]);
    assert.deepEqual([...(await dibs.sales.audit(tee.id)), ...(await dibs.sales.audit(mug.id))], []);
  });
});
