/**
 * The dashboard in a real browser, used as a person would: open the service, log in with a key,
 * create a pool, import a CSV file, claim, and see the counts and the claim-rate chart move.
 * Screenshots of each step land in test-artifacts/dashboard/ (gitignored).
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import type { Page, Request } from 'playwright-core';
import { openDibs } from '../../src/index.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { startServer, type RunningServer } from '../../src/service/server.js';
import { tempSqliteStore } from '../support/sqlite.js';
import { ARTIFACTS, chromiumMissing, launchChromium, type Browser } from './browser.js';

/** An admin key of the test's store, made before the service starts (as `dibs keys create` would). */
let KEY = '';
const AXE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');
const skip = chromiumMissing();

describe('dashboard in headless Chromium', { skip, timeout: 120_000 }, () => {
  const temp = tempSqliteStore();
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  const requests: Request[] = [];

  before(async () => {
    const dibs = await openDibs(temp.store);
    KEY = (await createApiKey(dibs.backend.service, { name: 'dashboard browser test', scopes: ['admin'] })).key;
    await dibs.close();
    server = await startServer({ store: temp.store, port: 0, host: '127.0.0.1', logger: false, jobs: false });
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.setDefaultTimeout(30_000);
    page.on('request', (request) => requests.push(request));
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    temp.cleanup();
  });

  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });
  const cell = (pool: string, column: string) => page.locator(`tr[data-pool="${pool}"] td[data-col="${column}"]`);

  it('logs in with an API key using the keyboard and keeps it in sessionStorage only', async () => {
    await page.goto(server.url);
    await assert.doesNotReject(page.getByRole('button', { name: 'Log in' }).waitFor());
    await shot('01-login');
    await page.getByLabel('API key', { exact: true }).focus();
    await page.keyboard.type(KEY);
    await page.keyboard.press('Enter');
    await page.getByRole('heading', { name: 'Coupon pools' }).waitFor();
    assert.equal(await page.locator('#login-view').isVisible(), false);
    assert.equal(await page.evaluate("sessionStorage.getItem('dibs.apiKey')"), KEY);
    assert.equal(await page.evaluate("localStorage.getItem('dibs.apiKey')"), null);
    await page.locator('#pool-rows').getByText('No pools yet').waitFor();
  });

  it('creates a pool, imports a CSV with a progress bar, claims, and the counts and chart update', async () => {
    await page.getByLabel('Name', { exact: true }).fill('spring-sale');
    await page.getByLabel('Codes per claimant').fill('1');
    await page.getByRole('button', { name: 'Create pool' }).click();
    await page.getByText('Created pool spring-sale').waitFor();
    await cell('spring-sale', 'total').filter({ hasText: /^0$/ }).waitFor();
    assert.equal(await page.getByLabel('Working on pool').inputValue(), 'spring-sale');

    const csv = join(temp.dir, 'codes.csv');
    writeFileSync(
      csv,
      `code\n${Array.from({ length: 500 }, (_, i) => `SPRING-${String(i).padStart(4, '0')}`).join('\n')}\n`,
    );
    await page.getByLabel('CSV or text file, one code per line').setInputFiles(csv);
    await page.getByRole('button', { name: 'Import into selected pool' }).click();
    await page.getByText(/Imported 500 codes into spring-sale/).waitFor();
    assert.equal(
      await page.locator('#import-progress').evaluate((bar) => (bar as unknown as { value: number }).value),
      100,
    );
    await cell('spring-sale', 'free').filter({ hasText: /^500$/ }).waitFor();
    await shot('02-imported');

    for (const claimant of ['alice@example.com', 'bob@example.com', 'carol@example.com']) {
      await page.getByLabel('Claimant', { exact: true }).fill(claimant);
      // Mouse for the first two, keyboard (Enter in the field submits the form) for the last.
      if (claimant.startsWith('carol')) await page.getByLabel('Claimant', { exact: true }).press('Enter');
      else await page.getByRole('button', { name: 'Claim from selected pool' }).click();
      await page.getByText(new RegExp(`${claimant.replace('.', '\\.')} got SPRING-\\d{4}`)).waitFor();
    }
    // Claims by another client count too: the chart samples the store, not this page's clicks.
    for (let i = 0; i < 7; i++) await server.dibs.pools.claim('spring-sale', `api-${i}`);
    await cell('spring-sale', 'claimed').filter({ hasText: /^10$/ }).waitFor();
    await cell('spring-sale', 'free').filter({ hasText: /^490$/ }).waitFor();
    // redemptions at checkout show up as the pool's redemption count
    for (let i = 0; i < 2; i++)
      await server.dibs.pools.redeem(
        'spring-sale',
        (await server.dibs.pools.holdings('spring-sale', `api-${i}`))[0]!.code,
        { orderId: `order-${i}` },
      );
    await cell('spring-sale', 'redeemed').filter({ hasText: /^2$/ }).waitFor();

    // The chart reaches 10 handed out with a positive rate somewhere in its series.
    await page.locator('#chart[data-pool="spring-sale"][data-handed-out="10"]').waitFor({ state: 'attached' });
    const peak = Number(await page.locator('#chart').getAttribute('data-peak'));
    assert.ok(peak > 0, `the chart shows a positive claim rate (peak ${peak}/min)`);
    assert.equal(await page.locator('#chart svg polyline').count(), 1);
    assert.match(
      String(await page.locator('#chart').getAttribute('aria-label')),
      /Claim rate of spring-sale: now [\d.]+ per minute/,
    );
    // The store's forecast is drawn on the chart (its pace as a dashed line, labelled with the
    // predicted time to empty) and told in the caption.
    await page.locator('#chart[data-pool="spring-sale"][data-forecast]').waitFor({ state: 'attached' });
    assert.ok(Number(await page.locator('#chart').getAttribute('data-forecast')) > 0);
    assert.equal(await page.locator('#chart svg line.forecast').count(), 1);
    assert.match(
      String(await page.locator('#chart svg text.forecast-label').textContent()),
      /^forecast: empty in ~.+ at [\d.]+\/min/,
    );
    assert.match(String(await page.locator('#chart-caption').textContent()), /Forecast: empty in ~/);
    await shot('03-claimed');
  });

  it('downloads the export with the key (not a bare link)', async () => {
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export spring-sale as CSV' }).click(),
    ]);
    const file = join(temp.dir, 'export.csv');
    await download.saveAs(file);
    const lines = readFileSync(file, 'utf8').trim().split('\n');
    assert.equal(lines.length, 501);
    assert.equal(lines.filter((line) => line.includes('alice@example.com')).length, 1);
  });

  it('shows sales, watched locks and counters, and recent events', async () => {
    const now = Date.now();
    await server.dibs.sales.create({
      id: 'drop-1',
      sku: 'SNEAKER',
      startsAt: new Date(now).toISOString(),
      endsAt: new Date(now + 3_600_000).toISOString(),
      cap: 20,
      perCustomerLimit: 2,
    });
    await server.dibs.sales.buy('drop-1', 'dana', 2);
    await server.dibs.sales.reserve('drop-1', 'erin', 1, 60_000);
    const lease = await server.dibs.locks.acquire('nightly-report', { ttlMs: 60_000 });
    await server.dibs.counters.incr('visits', 42);
    await server.dibs.pools.create({ name: 'tiny', lowStockThreshold: 1 });
    await server.dibs.pools.importCodes('tiny', ['T1', 'T2']);
    await server.dibs.pools.claim('tiny', 'zed'); // free 1 ≤ threshold 1: a low-stock event

    const sale = page.locator('tr[data-sale="drop-1"]');
    await sale.getByText('2 / 20').waitFor();
    await sale.getByText(/ends in (1h )?\d+m/).waitFor();
    assert.equal((await sale.locator('td').last().textContent())?.trim(), '1'); // one active hold

    await page.getByLabel('Lock key').fill('nightly-report');
    await page.getByRole('button', { name: 'Watch lock' }).click();
    await page.locator('#lock-rows').getByText(`fence ${lease.fence}`).waitFor();
    await page.getByLabel('Counter name').fill('visits');
    await page.getByRole('button', { name: 'Watch counter' }).click();
    await page.locator('#counter-rows').getByText('42').waitFor();

    await page.locator('#event-rows').getByText('tiny').first().waitFor();
    await page
      .locator('#outbox')
      .getByText(/pending/)
      .waitFor();
    await page
      .getByRole('button', { name: /Show deliveries of event/ })
      .first()
      .click();
    await page
      .locator('#deliveries')
      .getByText(/No delivery attempts yet|delivered|failed/)
      .waitFor();
    await shot('04-sales-locks-events');
    await server.dibs.locks.release(lease);
  });

  it('is labelled, and never leaves the service’s origin; every API call carries the key', async () => {
    // Every control has an accessible name (a <label>, aria-label or its own text).
    const unlabelled = await page.evaluate(`[...document.querySelectorAll('input, select, button, meter, progress')]
      .filter((el) => !el.hidden && !el.labels?.length && !el.getAttribute('aria-label') && !el.textContent.trim())
      .map((el) => el.outerHTML)`);
    assert.deepEqual(unlabelled, []);
    const origin = new URL(server.url).origin;
    const foreign = requests
      .map((r) => r.url())
      .filter((url) => !url.startsWith(origin) && !url.startsWith('data:') && !url.startsWith('blob:'));
    assert.deepEqual(foreign, []);
    const apiCalls = requests.filter((r) => new URL(r.url()).pathname.startsWith('/v1/'));
    assert.ok(apiCalls.length > 10);
    for (const call of apiCalls) assert.equal(call.headers().authorization, `Bearer ${KEY}`, call.url());
  });

  it('passes axe-core’s WCAG 2.1 AA checks (contrast included) in light and dark colour schemes', async () => {
    // axe runs through the DevTools protocol (page.evaluate), which the page's CSP does not block.
    for (const colorScheme of ['light', 'dark'] as const) {
      await page.emulateMedia({ colorScheme });
      const violations = (await page.evaluate(`${AXE}
        axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })
          .then((r) => r.violations.map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) })))`)) as unknown[];
      assert.deepEqual(violations, [], `${colorScheme}: ${JSON.stringify(violations, null, 1)}`);
    }
    await shot('05-dark');
    await page.emulateMedia({ colorScheme: 'light' });
  });

  it('returns to the log-in screen when the service answers 401', async () => {
    await page.route('**/v1/pools?*', (route) =>
      route.fulfill({
        status: 401,
        contentType: 'application/json',
        body: JSON.stringify({ error: { code: 'unauthorized', message: 'key revoked' } }),
      }),
    );
    await page.getByRole('button', { name: 'Log in' }).waitFor();
    await page.getByText(/was not accepted/).waitFor();
    assert.equal(await page.locator('#app-view').isVisible(), false);
    assert.equal(
      await page
        .getByLabel('API key', { exact: true })
        .evaluate((input) => input === (input.ownerDocument as unknown as { activeElement: unknown }).activeElement),
      true,
    );
    assert.equal(await page.evaluate("sessionStorage.getItem('dibs.apiKey')"), null);
    await shot('06-logged-out');
    await page.unroute('**/v1/pools?*');
  });
});
