/**
 * Launch notifications end to end on every store with an outbox (SQLite, PostgreSQL, Redis), against real local receivers: a webhook endpoint
 * that verifies signatures (and fails its first attempts), an SMTP server, and a push service
 * that decrypts the RFC 8291 payload with the subscriber's private key.
 */
import assert from 'node:assert/strict';
import { createECDH, randomBytes } from 'node:crypto';
import { after, before, describe, it } from 'node:test';
import { decrypt } from 'http_ece';
import webpush from 'web-push';
import { openDibs, type Dibs } from '../../src/index.js';
import { EmailChannel, WebhookChannel, WebPushChannel } from '../../src/notify/channels.js';
import { OutboxDispatcher } from '../../src/notify/dispatcher.js';
import { SIGNATURE_HEADER, verify } from '../../src/notify/signature.js';
import { httpReceiver, LOOPBACK_TLS, smtpReceiver } from '../support/receivers.js';
import { Agent } from 'node:https';
import { setTimeout as sleep } from 'node:timers/promises';
import { openTempSqlite } from '../support/sqlite.js';
import { openTempPg, requirePostgres } from '../support/postgres.js';
import { deletePrefix, SHARED_REDIS, sharedRedisAvailable, testPrefix } from '../support/redis.js';

const SECRET = 'whsec_dispatch_test';
const HOUR = 3_600_000;

const pgSkip = await requirePostgres();
dispatchSuite('sqlite', openTempSqlite);
if (!pgSkip) dispatchSuite('postgres', () => openTempPg());
if (await sharedRedisAvailable()) {
  dispatchSuite('redis', async () => {
    const prefix = testPrefix();
    const dibs = await openDibs(`${SHARED_REDIS}?prefix=${prefix}`);
    return {
      dibs,
      cleanup: async () => {
        await dibs.close();
        await deletePrefix(SHARED_REDIS, prefix);
      },
    };
  });
}

function dispatchSuite(label: string, open: () => Promise<{ dibs: Dibs; cleanup(): Promise<void> }>): void {
  describe(`${label}: launch notifications to wishlisters`, () => {
    let env: Awaited<ReturnType<typeof open>>;
    let dibs: Dibs;
    before(async () => {
      env = await open();
      dibs = env.dibs;
    });
    after(() => env.cleanup());

    const startSale = (sku: string) =>
      dibs.sales.create({
        sku,
        startsAt: new Date().toISOString(),
        endsAt: new Date(Date.now() + HOUR).toISOString(),
        cap: 100,
      });
    /** Drains until `done()` (retries are scheduled a few ms ahead), bounded to 5 s. */
    const settle = async (d: OutboxDispatcher, done: () => boolean | Promise<boolean>) => {
      const total = { delivered: 0, retried: 0, dead: 0 };
      for (const deadline = Date.now() + 5000; Date.now() < deadline && !(await done()); await sleep(10)) {
        const r = await d.drain();
        total.delivered += r.delivered;
        total.retried += r.retried;
        total.dead += r.dead;
      }
      return total;
    };
    const nothingPending = async () => (await dibs.backend.outbox.status()).pending === 0;
    const dispatcher = (
      channels: ConstructorParameters<typeof OutboxDispatcher>[0]['channels'],
      webhookUrls: string[] = [],
    ) =>
      new OutboxDispatcher({
        outbox: dibs.backend.outbox,
        channels,
        webhookUrls,
        backoff: { baseMs: 1, maxMs: 5 },
        maxAttempts: 6,
      });

    it('announces a sale once and delivers one signed webhook per wishlister, retrying failures', async () => {
      // The receiver fails every first attempt, and one customer's endpoint fails twice.
      const seen = new Map<string, number>();
      const receiver = await httpReceiver((request) => {
        const key = String(request.headers['idempotency-key']);
        const n = (seen.get(key) ?? 0) + 1;
        seen.set(key, n);
        const failures = request.path.endsWith('/flaky') ? 2 : 1;
        return n <= failures ? 503 : 200;
      });
      try {
        const sku = 'SNEAKER-1';
        for (const customer of ['ann', 'ben', 'cat'])
          await dibs.sales.wish(sku, customer, { webhook: receiver.url(customer === 'cat' ? '/flaky' : '/hook') });
        await dibs.sales.wish('OTHER-SKU', 'dan', { webhook: receiver.url() });
        const sale = await startSale(sku);
        const first = await dibs.sales.activateDue();
        assert.deepEqual(first, { sales: [sale.id], notifications: 3 });
        assert.deepEqual(await dibs.sales.activateDue(), { sales: [], notifications: 0 }, 'announced exactly once');

        const result = await settle(dispatcher({ webhook: new WebhookChannel({ secret: SECRET }) }), nothingPending);
        assert.equal(result.dead, 0);
        // Every request carries a valid signature over its body.
        for (const r of receiver.received)
          assert.deepEqual(verify(SECRET, r.headers[SIGNATURE_HEADER] as string, r.body.toString()), { ok: true });
        const delivered = receiver.received.map(
          (r) =>
            JSON.parse(r.body.toString()) as {
              type: string;
              idempotencyKey: string;
              data: { customer: string; sale: string };
            },
        );
        const notifications = delivered.filter((d) => d.type === 'sale.live.notify');
        assert.deepEqual(
          [...new Set(notifications.map((d) => d.data.customer))].sort(),
          ['ann', 'ben', 'cat'],
          'exactly the wishlisters of the SKU',
        );
        assert.equal(new Set(notifications.map((d) => d.idempotencyKey)).size, 3, 'one logical event per wishlister');
        assert.equal(
          seen.get(notifications.find((d) => d.data.customer === 'cat')!.idempotencyKey),
          3,
          'the flaky endpoint got two retries',
        );
        assert.ok(notifications.every((d) => d.data.sale === sale.id));
        const status = await dibs.backend.outbox.status();
        assert.equal(status.pending, 0);
        const catEvent = (await dibs.sales.events({ sale: sale.id })).find((e) => e.payload.customer === 'cat')!;
        const log = await dibs.backend.outbox.deliveries(catEvent.id);
        assert.deepEqual(
          log.map((d) => d.ok),
          [false, false, true],
          'every attempt is logged',
        );
      } finally {
        await receiver.close();
      }
    });

    it('sends email over SMTP', async () => {
      const smtp = await smtpReceiver();
      const email = new EmailChannel({ smtpUrl: smtp.url, from: 'sales@shop.test' });
      try {
        await dibs.sales.wish('LAMP-2', 'eve', { email: 'eve@example.com' });
        await dibs.sales.wish('LAMP-2', 'fay', { email: 'fay@example.com', webhook: 'http://127.0.0.1:9/unused' });
        await startSale('LAMP-2');
        assert.equal((await dibs.sales.activateDue()).notifications, 3);
        // Only email is configured: the webhook event stays pending for retry, email is delivered.
        await dispatcher({ email }).runOnce();
        assert.deepEqual(smtp.mails.map((m) => m.to[0]).sort(), ['eve@example.com', 'fay@example.com']);
        assert.ok(smtp.mails.every((m) => m.from === 'sales@shop.test' && /LAMP-2 is on sale now/.test(m.raw)));
        assert.ok(smtp.mails.every((m) => /X-Dibs-Idempotency-Key: sale\.live:/i.test(m.raw)));
      } finally {
        email.close();
        await smtp.close();
      }
    });

    it('sends web push encrypted for the subscriber, with a VAPID signature', async () => {
      const push = await httpReceiver(() => 201, { tls: true });
      try {
        const browser = createECDH('prime256v1');
        browser.generateKeys();
        const authSecret = randomBytes(16);
        const subscription = {
          endpoint: push.url('/push/abc'),
          keys: { p256dh: browser.getPublicKey().toString('base64url'), auth: authSecret.toString('base64url') },
        };
        await dibs.sales.wish('PHONE-3', 'gus', { webPush: subscription });
        await startSale('PHONE-3');
        await dibs.sales.activateDue();
        const vapid = webpush.generateVAPIDKeys();
        const agent = new Agent({ ca: LOOPBACK_TLS.cert });
        await settle(
          dispatcher({ webPush: new WebPushChannel({ vapid: { subject: 'mailto:ops@shop.test', ...vapid }, agent }) }),
          () => push.received.length > 0,
        );
        const requests = push.received.filter((r) => r.path === '/push/abc');
        assert.equal(requests.length, 1);
        const request = requests[0]!;
        assert.equal(request.headers['content-encoding'], 'aes128gcm');
        assert.match(String(request.headers.authorization), new RegExp(`^vapid t=.+, k=${vapid.publicKey}$`));
        const message = JSON.parse(
          decrypt(request.body, { version: 'aes128gcm', privateKey: browser, authSecret }).toString('utf8'),
        ) as { title: string; data: { customer: string } };
        assert.equal(message.title, 'PHONE-3 is on sale now');
        assert.equal(message.data.customer, 'gus');
      } finally {
        await push.close();
      }
    });

    it('dead-letters a permanent failure and hands pool events to the configured endpoints', async () => {
      const receiver = await httpReceiver((r) => (r.path === '/gone' ? 410 : 200));
      try {
        await dibs.pools.create({ name: 'alerts', lowStockThreshold: 1 });
        await dibs.pools.importCodes('alerts', ['A', 'B']);
        await dibs.pools.claim('alerts', 'someone');
        await dibs.sales.wish('GONE-4', 'hal', { webhook: receiver.url('/gone') });
        await startSale('GONE-4');
        await dibs.sales.activateDue();
        const result = await dispatcher({ webhook: new WebhookChannel({ secret: SECRET }) }, [
          receiver.url('/ops'),
        ]).drain();
        assert.ok(result.dead >= 1);
        const ops = receiver.received
          .filter((r) => r.path === '/ops')
          .map((r) => JSON.parse(r.body.toString()) as { type: string });
        assert.ok(
          ops.some((e) => e.type === 'pool.low_stock'),
          'low stock reached the operations endpoint',
        );
        assert.ok(ops.some((e) => e.type === 'sale.live'));
        assert.equal(receiver.received.filter((r) => r.path === '/gone').length, 1, 'no retry after 410');
        assert.ok((await dibs.backend.outbox.status()).dead >= 1);
      } finally {
        await receiver.close();
      }
    });

    it('two dispatchers side by side deliver each event once when nothing fails', async () => {
      const receiver = await httpReceiver(() => 200);
      try {
        for (let i = 0; i < 40; i++) await dibs.sales.wish('DUO-5', `w${i}`, { webhook: receiver.url('/duo') });
        await startSale('DUO-5');
        await dibs.sales.activateDue();
        const channel = new WebhookChannel({ secret: SECRET });
        const a = new OutboxDispatcher({ outbox: dibs.backend.outbox, channels: { webhook: channel }, batchSize: 7 });
        const b = new OutboxDispatcher({ outbox: dibs.backend.outbox, channels: { webhook: channel }, batchSize: 7 });
        await Promise.all([a.drain(), b.drain()]);
        const keys = receiver.received
          .filter((r) => r.path === '/duo')
          .map((r) => String(r.headers['idempotency-key']));
        assert.equal(keys.length, 40);
        assert.equal(new Set(keys).size, 40);
      } finally {
        await receiver.close();
      }
    });
  });
}
