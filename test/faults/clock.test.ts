/**
 * Clock faults: the client's clock is wrong (an hour fast, an hour slow — a VM resumed from
 * suspend, a container without NTP). dibs must not care: every time that decides anything (sale
 * windows, hold expiry, lease expiry) is the STORE's clock. The skew is applied to this process's
 * Date (Date.now and new Date()); SQLite's clock is SQLite's own (its C library time), PostgreSQL's
 * and Redis' are their servers'.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import type { Dibs } from '../../src/index.js';
import { openDibs } from '../../src/index.js';
import { openTempPg, requirePostgres } from '../support/postgres.js';
import { deletePrefix, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';
import { openTempSqlite } from '../support/sqlite.js';

const RealDate = Date;

/** Shifts this process's wall clock by `skewMs` until the returned function is called. */
function skewClock(skewMs: number): () => void {
  class SkewedDate extends RealDate {
    constructor(...args: unknown[]) {
      if (args.length === 0) super(RealDate.now() + skewMs);
      else super(...(args as [string]));
    }
    static override now(): number {
      return RealDate.now() + skewMs;
    }
  }
  globalThis.Date = SkewedDate as DateConstructor;
  return () => {
    globalThis.Date = RealDate;
  };
}

const stores: {
  label: string;
  skip: string | false;
  sales: boolean;
  open: () => Promise<{ dibs: Dibs; cleanup(): Promise<void> }>;
}[] = [
  { label: 'sqlite', skip: false, sales: true, open: openTempSqlite },
  { label: 'postgres', skip: await requirePostgres(), sales: true, open: () => openTempPg() },
  {
    label: 'redis',
    skip: (await sharedRedisAvailable()) ? false : 'redis on 127.0.0.1:6379 is not reachable',
    sales: true,
    open: async () => {
      const prefix = testPrefix();
      const dibs = await openDibs(`${SHARED_REDIS}?prefix=${prefix}`);
      return { dibs, cleanup: async () => (await dibs.close(), await deletePrefix(SHARED_REDIS, prefix)) };
    },
  },
];

// One skew at a time (it is this process's Date), but within it every store and both rounds at once:
// each round mostly sleeps through a 3 s TTL, so the file takes about two TTLs instead of twelve.
for (const skewMs of [3_600_000, -3_600_000]) {
  const skew = skewMs > 0 ? 'an hour fast' : 'an hour slow';
  describe(`the client's clock is ${skew}`, { concurrency: true }, () => {
    const envs = new Map<string, { dibs: Dibs; cleanup(): Promise<void> }>();
    let restore = () => {};
    // the stores are opened on the real clock, then the whole process's clock is skewed
    before(async () => {
      // each store's lock path warmed up first: a lease is given back when the store's answer comes
      // after its 3 s TTL, and the first call (modules loaded, scripts and statements prepared) took
      // that long at load average 50 while the other rounds started beside it
      await Promise.all(
        stores
          .filter((s) => !s.skip)
          .map(async (s) => {
            const env = await s.open();
            envs.set(s.label, env);
            await env.dibs.locks.release(await env.dibs.locks.acquire('warm-up', { ttlMs: 60_000 }));
          }),
      );
      restore = skewClock(skewMs);
    });
    after(async () => {
      restore();
      await Promise.all([...envs.values()].map((env) => env.cleanup()));
    });

    for (const store of stores) {
      it(`${store.label}: leases expire by the store clock: held for their TTL, free after it`, {
        skip: store.skip,
      }, async () => {
        const { dibs } = envs.get(store.label)!;
        const lease = await dibs.locks.acquire('clock-key', { ttlMs: 3000 });
        const expiresIn = new RealDate(lease.expiresAt).getTime() - RealDate.now();
        assert.ok(expiresIn > 500 && expiresIn <= 4000, `expiresAt is the store's now + TTL (in ${expiresIn} ms)`);
        assert.equal(await dibs.locks.tryAcquire('clock-key', { ttlMs: 1500 }), null, 'still held within its TTL');
        await sleep(new RealDate(lease.expiresAt).getTime() - RealDate.now() + 500);
        const next = await dibs.locks.tryAcquire('clock-key', { ttlMs: 1500 });
        assert.ok(next !== null, 'free after its TTL, by the store clock');
        assert.ok(next.fence > lease.fence);
      });

      it(`${store.label}: sale windows and hold expiry follow the store clock`, {
        skip: store.skip || (store.sales ? false : 'no sales on this store'),
      }, async () => {
        const { dibs } = envs.get(store.label)!;
        const realNow = RealDate.now();
        // created with real timestamps while the client's clock is off: live now, ends in a minute;
        // an hour fast, the client would think the sale ended; an hour slow, that it has not begun
        const sale = await dibs.sales.create({
          sku: `CLOCK-${skewMs}`,
          startsAt: new RealDate(realNow).toISOString(),
          endsAt: new RealDate(realNow + 60_000).toISOString(),
          cap: 10,
          perCustomerLimit: 2,
        });
        assert.equal((await dibs.sales.get(sale.id)).status, 'live');
        const { order } = await dibs.sales.buy(sale.id, 'alice', 1);
        assert.ok(order.id);
        const { hold } = await dibs.sales.reserve(sale.id, 'bob', 1, 3000);
        const expiresIn = new RealDate(hold.expiresAt).getTime() - RealDate.now();
        assert.ok(expiresIn > 0 && expiresIn <= 4000, `a hold expires at the store's now + TTL (in ${expiresIn} ms)`);
        assert.equal((await dibs.sales.get(sale.id)).stats.held, 1, 'the hold counts while it lives');
        await sleep(new RealDate(hold.expiresAt).getTime() - RealDate.now() + 500);
        assert.equal(
          (await dibs.sales.get(sale.id)).stats.held,
          0,
          'and stops counting once the store clock passes it',
        );
        assert.deepEqual(await dibs.sales.audit(sale.id), []);
      });
    }
  });
}
