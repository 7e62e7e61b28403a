/**
 * The background jobs run side by side the way several service processes run them: three Dibs
 * instances, each with its own connection(s) to one store (a SQLite file, a PostgreSQL schema, a
 * Redis key prefix) and
 * its own runner and dispatcher.
 * Each sale is announced once, each wishlister notified once, expired holds swept, ended sales
 * recorded once.
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { after, before, describe, it } from 'node:test';
import { openDibs, type Dibs } from '../../src/index.js';
import { JobRunner, standardJobs } from '../../src/jobs/runner.js';
import { WebhookChannel } from '../../src/notify/channels.js';
import { OutboxDispatcher } from '../../src/notify/dispatcher.js';
import { httpReceiver } from '../support/receivers.js';
import { tempPgStore, requirePostgres } from '../support/postgres.js';
import { tempSqliteStore } from '../support/sqlite.js';
import { deletePrefix, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';

const pgSkip = await requirePostgres();
runnerSuite('sqlite', () => {
  const temp = tempSqliteStore();
  return { store: temp.store, cleanup: async () => temp.cleanup() };
});
if (!pgSkip)
  runnerSuite('postgres', () => {
    const temp = tempPgStore({ poolSize: '4' });
    return { store: temp.store, cleanup: () => temp.drop() };
  });
if (await sharedRedisAvailable())
  runnerSuite('redis', () => {
    const prefix = testPrefix();
    return { store: `${SHARED_REDIS}?prefix=${prefix}`, cleanup: () => deletePrefix(SHARED_REDIS, prefix) };
  });

function runnerSuite(label: string, makeStore: () => { store: string; cleanup(): Promise<void> }): void {
  describe(`${label}: three job runners sharing one store`, () => {
    const temp = makeStore();
    const instances: Dibs[] = [];
    before(async () => {
      for (let i = 0; i < 3; i++) instances.push(await openDibs(temp.store));
    });
    after(async () => {
      for (const d of instances) await d.close();
      await temp.cleanup();
    });

    it('activate, notify, sweep and end exactly once each', async () => {
      const receiver = await httpReceiver(() => 200);
      const [admin] = instances as [Dibs];
      try {
        for (let i = 0; i < 25; i++) await admin.sales.wish('JOB-SKU', `fan-${i}`, { webhook: receiver.url('/fans') });
        const sale = await admin.sales.create({
          sku: 'JOB-SKU',
          startsAt: new Date(Date.now() + 300).toISOString(),
          endsAt: new Date(Date.now() + 2500).toISOString(),
          cap: 5,
        });
        assert.equal(sale.status, 'scheduled');
        const runners = instances.map((dibs) => {
          const dispatcher = new OutboxDispatcher({
            outbox: dibs.backend.outbox,
            channels: { webhook: new WebhookChannel({ secret: 's' }) },
            batchSize: 5,
          });
          return new JobRunner(standardJobs(dibs, { dispatcher, everyMs: 50 }), {
            onError: (name, error) => assert.fail(`${name}: ${String(error)}`),
          });
        });
        runners.forEach((r) => r.start());
        // Once live, a hold is placed and left to expire.
        for (
          const deadline = Date.now() + 5000;
          (await admin.sales.get(sale.id)).status !== 'live' && Date.now() < deadline;
        )
          await sleep(20);
        const { hold } = await admin.sales.reserve(sale.id, 'shopper', 1, 1000);
        for (const deadline = Date.now() + 8000; Date.now() < deadline; await sleep(50)) {
          const ended = (await admin.sales.events({ sale: sale.id })).some((e) => e.type === 'sale.ended');
          if (ended && receiver.received.length >= 25 && (await admin.backend.outbox.status()).pending === 0) break;
        }
        await Promise.all(runners.map((r) => r.stop()));

        const events = await admin.sales.events({ sale: sale.id, limit: 1000 });
        const count = (type: string) => events.filter((e) => e.type === type).length;
        assert.equal(count('sale.live'), 1);
        assert.equal(count('sale.live.notify'), 25);
        assert.equal(count('hold.expired'), 1);
        assert.equal(count('sale.ended'), 1);
        assert.equal((await admin.sales.hold(hold.id)).status, 'expired');
        const fans = receiver.received
          .filter((r) => r.path === '/fans')
          .map((r) => String(r.headers['idempotency-key']));
        assert.equal(new Set(fans).size, 25, 'every fan notified');
        assert.equal(fans.length, 25, 'and only once, with three dispatchers running');
        assert.deepEqual(await admin.sales.audit(sale.id), []);
      } finally {
        await receiver.close();
      }
    });
  });
}
