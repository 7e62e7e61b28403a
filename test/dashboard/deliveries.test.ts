/**
 * The events & deliveries page in headless Chromium, as an operator would use it: a webhook
 * receiver owned by the test answers 500, so the page shows the endpoint failing and the event in
 * the dead letters; the receiver is fixed, "Retry now" is pressed, and the event is delivered
 * (the receiver saw it, the dead letter is gone, the endpoint's rate moves). axe (no serious or
 * critical violation, light and dark) and a 390 px phone width. Screenshots: test-artifacts/dashboard/.
 */
import assert from 'node:assert/strict';
import { createServer, type Server } from 'node:http';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { openDibs } from '../../src/index.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { startServer, type RunningServer } from '../../src/service/server.js';
import { tempSqliteStore } from '../support/sqlite.js';
import { ARTIFACTS, assertAccessibleAndPhoneSized, chromiumMissing, launchChromium, type Browser } from './browser.js';

const skip = chromiumMissing();

describe('events & deliveries page (headless Chromium)', { skip, timeout: 90_000 }, () => {
  const temp = tempSqliteStore();
  let server: RunningServer;
  let receiver: Server;
  let hookUrl = '';
  let browser: Browser;
  let page: Page;
  let adminKey = '';
  /** What the receiver answers, and the idempotency keys it accepted (2xx). */
  let answer = 500;
  const accepted: string[] = [];

  before(async () => {
    receiver = createServer((request, response) => {
      request.resume();
      request.on('end', () => {
        if (answer < 300) accepted.push(String(request.headers['idempotency-key']));
        response.writeHead(answer).end();
      });
    });
    await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
    const address = receiver.address();
    assert.ok(address && typeof address === 'object');
    hookUrl = `http://127.0.0.1:${address.port}/hooks`;

    const dibs = await openDibs(temp.store);
    adminKey = (await createApiKey(dibs.backend.service!, { name: 'operator', scopes: ['admin'] })).key;
    await dibs.close();
    server = await startServer({
      store: temp.store,
      port: 0,
      host: '127.0.0.1',
      logger: false,
      jobsEveryMs: 200,
      // two attempts a short backoff apart, so a 500 becomes a dead letter within a second
      delivery: { maxAttempts: 2, backoff: { baseMs: 200, maxMs: 200 } },
      env: { DIBS_WEBHOOK_URLS: hookUrl, DIBS_WEBHOOK_SECRET: 'whsec_test' },
    });
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.setDefaultTimeout(20_000);
    await page.goto(server.url);
    await page.getByLabel('API key', { exact: true }).fill(adminKey);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Coupon pools' }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    await new Promise((resolve) => receiver?.close(resolve));
    temp.cleanup();
  });

  it('shows a failing endpoint and its dead letter, retries it after the fix, and sees it delivered', async () => {
    // a sale going live is an event for the webhook endpoints
    await server.dibs.sales.create({
      id: 'hooked',
      sku: 'HOOK-SKU',
      startsAt: new Date().toISOString(),
      endsAt: new Date(Date.now() + 3_600_000).toISOString(),
      cap: 5,
    });
    await page.getByRole('link', { name: 'Deliveries' }).click();
    await page.waitForURL(/#\/deliveries$/);
    await page.getByRole('heading', { name: 'Events & deliveries' }).waitFor();

    const endpoint = page.locator(`#dl-endpoint-rows tr[data-endpoint="${hookUrl}"]`);
    await endpoint.getByText('0%', { exact: true }).waitFor();
    await endpoint.getByText(/HTTP 500/).waitFor();
    const dead = page.locator('#dl-dead-rows tr', { hasText: 'sale.live' });
    await dead.getByText(/HTTP 500/).waitFor();
    const id = (await dead.getAttribute('data-event'))!;
    assert.ok(id, 'the dead letter names its event');
    assert.deepEqual(accepted, []);
    await page.screenshot({ path: join(ARTIFACTS, '50-deliveries-dead.png'), fullPage: true });
    await assertAccessibleAndPhoneSized(page, '50-deliveries-dead');

    answer = 200; // the receiver is fixed
    await page.getByRole('button', { name: `Retry now: event ${id}` }).click();
    await page.locator('#dl-result').getByText(`Event ${id} is due again`, { exact: false }).waitFor();
    await page.locator(`#dl-dead-rows tr[data-event="${id}"]`).waitFor({ state: 'detached' });
    // delivered on the next dispatcher run: the endpoint has a success now, and the log says so
    await endpoint.locator('td.num', { hasText: /^1$/ }).first().waitFor();
    const log = (await (
      await fetch(`${server.url}/v1/events/${id}/deliveries`, { headers: { authorization: `Bearer ${adminKey}` } })
    ).json()) as { data: { ok: boolean }[] };
    assert.deepEqual(
      log.data.map((d) => d.ok),
      [false, false, true],
    );
    assert.ok(accepted.length >= 1, 'the receiver got the event');
    await page.screenshot({ path: join(ARTIFACTS, '51-deliveries-retried.png'), fullPage: true });

    // a delivered event cannot be retried: said in place, not thrown away
    await page.getByLabel('Event id').fill(id);
    await page.getByRole('button', { name: 'Retry now', exact: true }).click();
    await page.locator('#dl-result').getByText('already delivered', { exact: false }).waitFor();
    await assertAccessibleAndPhoneSized(page, '51-deliveries-retried');
  });

  it("shows a code's history from the outbox on the pool page (a refund)", async () => {
    await server.dibs.pools.create({ name: 'spring' });
    await server.dibs.pools.importCodes('spring', ['SPRING-1', 'SPRING-2']);
    const { code } = await server.dibs.pools.claim('spring', 'alice');
    await server.dibs.pools.redeem('spring', code, { orderId: 'order-7' });
    await server.dibs.pools.unredeem('spring', code);
    await page.goto(`${server.url}/#/pool/spring`);
    await page
      .getByRole('heading', { name: /spring/ })
      .first()
      .waitFor();
    await page.getByLabel('Code to look up').fill(code);
    await page.getByRole('button', { name: 'Look up code' }).click();
    await page
      .locator('#code-history li')
      .getByText(/code\.unredeemed: refunded to alice \(order order-7\)/)
      .waitFor();
    const other = code === 'SPRING-1' ? 'SPRING-2' : 'SPRING-1';
    await page.getByLabel('Code to look up').fill(other);
    await page.getByRole('button', { name: 'Look up code' }).click();
    await page
      .locator('#code-history')
      .getByText(/^No events name this code/)
      .waitFor();
    await page.screenshot({ path: join(ARTIFACTS, '52-pool-code-history.png'), fullPage: true });
  });
});
