/**
 * Running a campaign from the dashboard in headless Chromium, as an operator would: create a sale
 * with a waiting room, open its page, watch a crowd of buyers (the service's public API, their own
 * key) arrive and the chart move, find a customer and cancel their hold, edit and cancel the sale;
 * then the pool page and the API keys page. Every page passes axe (no serious or critical
 * violations, light and dark) and fits a phone's width. Screenshots: test-artifacts/dashboard/.
 */
import { after, before, describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { Page, Request } from 'playwright-core';
import { openDibs } from '../../src/index.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { startServer, type RunningServer } from '../../src/service/server.js';
import { tempSqliteStore } from '../support/sqlite.js';
import { ARTIFACTS, assertAccessibleAndPhoneSized, chromiumMissing, launchChromium, type Browser } from './browser.js';
import { runBuyers, type BuyerOutcome } from './buyers.js';

const skip = chromiumMissing();

describe('running a campaign from the dashboard (headless Chromium)', { skip, timeout: 150_000 }, () => {
  const temp = tempSqliteStore();
  let server: RunningServer;
  let browser: Browser;
  let page: Page;
  let adminKey = '';
  let buyerKey = '';
  const requests: Request[] = [];

  before(async () => {
    const dibs = await openDibs(temp.store);
    adminKey = (await createApiKey(dibs.backend.service, { name: 'operator', scopes: ['admin'] })).key;
    buyerKey = (await createApiKey(dibs.backend.service, { name: 'storefront', scopes: ['sales:buy'] })).key;
    await dibs.close();
    server = await startServer({ store: temp.store, port: 0, host: '127.0.0.1', logger: false, jobs: false });
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.setDefaultTimeout(30_000);
    page.on('request', (request) => requests.push(request));
    await page.goto(server.url);
    await page.getByLabel('API key', { exact: true }).fill(adminKey);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Coupon pools' }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    temp.cleanup();
  });

  const shot = (name: string) => page.screenshot({ path: join(ARTIFACTS, `${name}.png`), fullPage: true });

  /** axe in both schemes, and at a phone's width nothing wider than the screen. */
  const accessibleAndPhoneSized = (name: string) => assertAccessibleAndPhoneSized(page, name);

  it('creates a sale with a waiting room, watches the crowd arrive, finds a customer and cancels the hold', async () => {
    // the sale starts a few seconds from now: the page counts down to its start, then to its end
    const startsAt = (await page.evaluate('new Date(Date.now() + 5000).toISOString()')) as string;
    const local = (iso: string) =>
      page.evaluate(
        `((d) => { const p = (n) => String(n).padStart(2, '0'); return d.getFullYear() + '-' + p(d.getMonth() + 1) + '-' + p(d.getDate()) + 'T' + p(d.getHours()) + ':' + p(d.getMinutes()) + ':' + p(d.getSeconds()); })(new Date(${JSON.stringify(iso)}))`,
      ) as Promise<string>;
    await page.getByLabel('Sale id').fill('launch');
    await page.getByLabel('SKU').fill('SNEAKER-RED');
    await page
      .getByLabel('Starts')
      .first()
      .fill(await local(startsAt));
    await page
      .getByLabel('Ends')
      .first()
      .fill(await local(new Date(Date.parse(startsAt) + 3_600_000).toISOString()));
    await page.getByLabel('Units (cap)').first().fill('40');
    await page.getByLabel('Units per customer').first().fill('1');
    await page.getByLabel('Waiting room: admit per second').fill('5');
    await page.getByRole('button', { name: 'Create sale' }).click();

    // the sale's page opens with focus on its heading
    await page.waitForURL(/#\/sale\/launch$/);
    const heading = page.getByRole('heading', { name: 'Sale launch' });
    await heading.waitFor();
    assert.equal(
      await heading.evaluate(
        (node) => node === (node.ownerDocument as unknown as { activeElement: unknown }).activeElement,
      ),
      true,
    );
    await page
      .locator('#sale-summary')
      .getByText(/starts in \d+s/)
      .waitFor();
    await page
      .locator('#room-summary')
      .getByText(/Admits up to 5\/s/)
      .waitFor();
    await shot('10-sale-scheduled');

    const load = new AbortController();
    const customers = Array.from({ length: 30 }, (_, i) => `buyer-${String(i).padStart(2, '0')}@example.com`);
    const crowd = runBuyers({ url: server.url, key: buyerKey, sale: 'launch', customers, signal: load.signal });
    let outcomes: BuyerOutcome[] = [];
    try {
      await page
        .locator('#sale-summary')
        .getByText(/ends in \d+m/)
        .waitFor();
      // people in line, then admitted at the room's pace, holding and buying: the chart moves
      await page
        .locator('#sale-chart[data-latest-sold]:not([data-latest-sold="0"]):not([data-latest-sold=""])')
        .waitFor({ state: 'attached' });
      await page
        .locator('#sale-chart:not([data-latest-held="0"]):not([data-latest-held=""])')
        .waitFor({ state: 'attached' });
      outcomes = await crowd;
    } finally {
      load.abort();
      await crowd.catch(() => undefined);
    }
    const bought = outcomes.filter((o) => o.result === 'bought').length;
    const held = outcomes.filter((o) => o.result === 'held');
    assert.equal(bought + held.length, 30, JSON.stringify(outcomes));

    await page.locator('#sale-sold').getByText(String(bought), { exact: true }).waitFor();
    await page.locator('#sale-held').getByText(String(held.length), { exact: true }).waitFor();
    await page
      .locator('#sale-available')
      .getByText(String(40 - 30), { exact: true })
      .waitFor();
    await page.locator('#room-used').getByText('30', { exact: true }).waitFor();
    assert.match(String(await page.locator('#room-summary').textContent()), /Admitted lately: \d+\/min/);
    assert.match(
      String(await page.locator('#sale-forecast').textContent()),
      /sold out in ~.+ at [\d.]+\/min|not emptying/,
    );
    const points = Number(await page.locator('#sale-chart').getAttribute('data-points'));
    assert.ok(points >= 3, `the chart has a series (${points} points)`);
    assert.equal(await page.locator('#sale-chart svg polyline[data-series]').count(), 3);
    assert.match(
      String(await page.locator('#sale-chart').getAttribute('aria-label')),
      new RegExp(`sold ${bought}, held ${held.length}, available 10`),
    );
    assert.equal(await page.locator('#hold-rows tr[data-hold]').count(), held.length);
    await shot('11-sale-live');

    // a customer calls: find them, cancel their hold; the unit goes back on sale
    const caller = held[0]!;
    await page.getByLabel('Find a customer').fill(caller.customer);
    await page.getByLabel('Find a customer').press('Enter');
    await page.locator('#hold-rows tr[data-hold]').first().waitFor();
    // polled from here, not page.waitForFunction: a string predicate is evaluated in the page, which
    // the dashboard's CSP (script-src 'self') refuses whenever the first check is not already true
    for (const until = Date.now() + 10_000; (await page.locator('#hold-rows tr[data-hold]').count()) !== 1; ) {
      assert.ok(Date.now() < until, 'the search leaves one hold row');
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    assert.equal(await page.locator('#hold-rows tr[data-hold]').getAttribute('data-customer'), caller.customer);
    await shot('12-sale-customer');
    await page.getByRole('button', { name: `Cancel the hold of ${caller.customer}` }).click();
    await page
      .locator('#hold-result')
      .getByText(`Cancelled the hold of ${caller.customer} (1 unit back on sale).`)
      .waitFor();
    await page.locator('#holds-summary').getByText(`${caller.customer} has no active hold.`).waitFor();
    assert.equal((await server.dibs.sales.hold(caller.holdId!)).status, 'cancelled');
    await page
      .locator('#sale-held')
      .getByText(String(held.length - 1), { exact: true })
      .waitFor();
    await page.locator('#sale-available').getByText('11', { exact: true }).waitFor();
    await accessibleAndPhoneSized('13-sale');
  });

  it('edits and cancels the sale from its page', async () => {
    await page.getByLabel('Units (cap)').last().fill('45');
    await page.getByRole('button', { name: 'Save changes' }).click();
    await page
      .locator('#sale-edit-result')
      .getByText(/Saved: launch .*cap 45/)
      .waitFor();
    await page.locator('#sale-cap').getByText('45', { exact: true }).waitFor();
    assert.equal((await server.dibs.sales.get('launch')).cap, 45);

    await page.getByRole('button', { name: 'Cancel this sale…' }).click();
    await page.getByRole('button', { name: 'Keep it' }).click(); // changing one's mind cancels nothing
    assert.equal((await server.dibs.sales.get('launch')).status, 'live');
    await page.getByRole('button', { name: 'Cancel this sale…' }).click();
    await page.getByRole('button', { name: 'Yes, cancel the sale' }).click();
    await page.locator('#sale-cancel-result').getByText('Sale launch is cancelled.').waitFor();
    await page
      .locator('#sale-summary')
      .getByText(/cancelled/)
      .waitFor();
    assert.equal((await server.dibs.sales.get('launch')).status, 'cancelled');
    await page.getByLabel('Find a customer').fill('');
    await page.getByRole('button', { name: 'Find' }).click();
    await page.locator('#hold-rows').getByText('No active holds.').waitFor();
    await shot('14-sale-cancelled');
    // back to the overview with the link
    await page.getByRole('link', { name: '← All sales' }).click();
    await page.locator('tr[data-sale="launch"]').getByText('cancelled').first().waitFor();
  });

  it('runs a pool from its page: import with progress, claim rate, code and claimant lookup, redeem / release / revoke, audit, export, generate', async () => {
    await server.dibs.pools.create({ name: 'spring', perClaimantLimit: 2 });
    await page.goto(`${server.url}/#/pool/spring`);
    await page.getByRole('heading', { name: 'Pool spring' }).waitFor();
    await page.locator('#pool-total').getByText('0', { exact: true }).waitFor();

    const csv = join(temp.dir, 'spring.csv');
    writeFileSync(
      csv,
      `code\n${Array.from({ length: 2000 }, (_, i) => `SPRING-${String(i).padStart(4, '0')}`).join('\n')}\n`,
    );
    await page.getByLabel('Codes file (CSV or text, one per line; streamed)').setInputFiles(csv);
    await page.getByRole('button', { name: 'Import into this pool' }).click();
    await page
      .locator('#pool-import-result')
      .getByText('Imported 2,000 codes into spring (0 duplicates, 0 invalid).')
      .waitFor();
    await page.locator('#pool-free').getByText('2,000', { exact: true }).waitFor();

    // claims from the storefront (another client): the counts, the rate and the forecast move
    const held: Record<string, string> = {};
    for (const who of ['alice', 'bob', 'carol', 'dan', 'eve', 'fay', 'gus', 'hal'])
      held[who] = (await server.dibs.pools.claim('spring', who)).code;
    await page.locator('#pool-claimed').getByText('8', { exact: true }).waitFor();
    await page.locator('#pool-chart[data-pool="spring"][data-handed-out="8"]').waitFor({ state: 'attached' });
    await page.locator('#pool-chart[data-forecast]').waitFor({ state: 'attached' });
    assert.match(String(await page.locator('#pool-forecast').textContent()), /^empty in ~.+ at [\d.]+\/min/);

    // a customer at the till: look the code up, redeem it
    await page.getByLabel('Code to look up').fill(held.alice!);
    await page.getByRole('button', { name: 'Look up code' }).click();
    const facts = page.locator(`#code-result dl[data-code="${held.alice}"]`);
    await facts.getByText('claimed', { exact: true }).waitFor();
    await facts.getByText('alice', { exact: true }).waitFor();
    await page.getByRole('button', { name: `Redeem ${held.alice}` }).click();
    await page.locator('#code-action-result').getByText(`${held.alice} redeemed (now redeemed).`).waitFor();
    await facts.getByText('redeemed', { exact: true }).waitFor();
    assert.equal((await server.dibs.pools.code('spring', held.alice!)).status, 'redeemed');
    await page.getByLabel('Code to look up').fill('NO-SUCH-CODE');
    await page.getByLabel('Code to look up').press('Enter');
    await page.locator('#code-result').getByText('No code NO-SUCH-CODE in spring.').waitFor();

    // a claimant asks what they hold: release one, then revoke it for good (two presses)
    await page.getByLabel('Claimant to look up').fill('bob');
    await page.getByLabel('Claimant to look up').press('Enter');
    await page.locator('#claimant-summary').getByText('bob holds 1 code.').waitFor();
    await page.locator(`#claimant-rows tr[data-code="${held.bob}"]`).waitFor();
    await shot('20-pool-lookup');
    await page.getByRole('button', { name: `Release ${held.bob}` }).click();
    await page.locator('#code-action-result').getByText(`${held.bob} released back to the pool (now free).`).waitFor();
    await page.locator('#claimant-summary').getByText('bob holds no code of spring.').waitFor();
    await page.getByLabel('Code to look up').fill(held.bob!);
    await page.getByRole('button', { name: 'Look up code' }).click();
    await page.getByRole('button', { name: `Revoke ${held.bob}` }).click();
    assert.equal((await server.dibs.pools.code('spring', held.bob!)).status, 'free', 'the first press only asks');
    await page.getByRole('button', { name: `Confirm: revoke ${held.bob} for good` }).click();
    await page.locator('#code-action-result').getByText(`${held.bob} revoked for good (now revoked).`).waitFor();
    assert.equal((await server.dibs.pools.code('spring', held.bob!)).status, 'revoked');
    await page.locator('#pool-revoked').getByText('1', { exact: true }).waitFor();

    await page.getByRole('button', { name: 'Run the audit' }).click();
    await page
      .locator('#pool-audit-result')
      .getByText(/^Clean: no violations in spring/)
      .waitFor();

    await page.getByLabel('Codes to export').selectOption('redeemed');
    const [file] = await Promise.all([
      page.waitForEvent('download'),
      page.getByRole('button', { name: 'Export CSV' }).click(),
    ]);
    const saved = join(temp.dir, 'redeemed.csv');
    await file.saveAs(saved);
    const lines = readFileSync(saved, 'utf8').trim().split('\n');
    assert.equal(lines.length, 2);
    assert.ok(lines[1]!.startsWith(`${held.alice},redeemed,alice,`), lines[1]);
    await page.getByLabel('How many').fill('100');
    await page.getByLabel('Random characters').fill('8');
    await page.getByLabel('Prefix').fill('GEN-');
    await page.getByRole('button', { name: 'Generate into this pool' }).click();
    await page
      .locator('#pool-generate-result')
      .getByText(/^Generated 100 codes into spring/)
      .waitFor();
    await page.locator('#pool-total').getByText('2,100', { exact: true }).waitFor();
    let free = '';
    for await (const chunk of await server.dibs.pools.exportCsv('spring', { status: 'free' })) free += String(chunk);
    assert.equal(free.match(/^GEN-[A-Za-z0-9]{8},free,/gm)?.length, 100);
    await shot('21-pool');
    await accessibleAndPhoneSized('22-pool');
  });

  it('manages API keys: create one (shown once) with scopes, use it, list, revoke', async () => {
    await page.getByRole('link', { name: 'API keys' }).click();
    await page.getByRole('heading', { name: 'API keys' }).waitFor();
    await page
      .locator('#keys-me')
      .getByText(/Logged in with key [0-9a-f]{16} \(tenant default; scopes admin\)/)
      .waitFor();
    await page.locator('#key-rows tr[data-key]').nth(1).waitFor(); // operator and storefront
    await page.getByLabel('Key name').fill('checkout service');
    await page.getByRole('button', { name: 'Create key' }).click();
    await page.locator('#key-create-result').getByText('Pick at least one scope.').waitFor();
    await page.getByRole('checkbox', { name: /^pools:claim/ }).check();
    await page.getByRole('checkbox', { name: /^pools:read/ }).check();
    await page.getByRole('button', { name: 'Create key' }).click();
    await page
      .locator('#key-create-result')
      .getByText(/^Created key checkout service \([0-9a-f]{16}\) with pools:read, pools:claim\.$/)
      .waitFor();
    const secret = String(await page.locator('#key-secret-value').textContent());
    assert.match(secret, /^dibs_[0-9a-f]{16}_/);
    const id = secret.split('_')[1]!;
    const row = page.locator(`#key-rows tr[data-key="${id}"]`);
    await row.getByText('pools:read, pools:claim').waitFor();
    await shot('30-keys-created');

    // the key works, with exactly its scopes
    const call = (path: string) =>
      fetch(server.url + path, { headers: { authorization: `Bearer ${secret}` } }).then((r) => r.status);
    assert.equal(await call('/v1/pools/spring'), 200);
    assert.equal(await call('/v1/sales'), 403);

    // shown once: hidden on request and gone from the page after leaving it
    await page.getByRole('button', { name: 'Done (hide the key)' }).click();
    assert.equal(await page.locator('#key-secret').isVisible(), false);
    assert.equal(await page.locator('#key-secret-value').textContent(), '');

    await page.getByRole('button', { name: `Revoke key checkout service (${id})` }).click();
    assert.equal(await call('/v1/pools/spring'), 200, 'the first press only asks');
    await page.getByRole('button', { name: `Confirm: revoke key checkout service (${id}) for good` }).click();
    await page.locator('#key-action-result').getByText(`Revoked key checkout service (${id}).`).waitFor();
    await row.getByText(/^revoked /).waitFor();
    assert.equal(await call('/v1/pools/spring'), 401);
    await accessibleAndPhoneSized('31-keys');
  });

  it("lists the store's locks and counters on the overview without typing their names; passes axe there too", async () => {
    const lease = await server.dibs.locks.acquire('nightly-export', { ttlMs: 60_000 });
    await server.dibs.counters.incr('signups', 7);
    await page.getByRole('link', { name: 'Locks & counters' }).click();
    await page.getByRole('heading', { name: 'Locks & counters' }).waitFor();
    await page.locator('tr[data-lock="nightly-export"]').getByText(`fence ${lease.fence}`).waitFor();
    await page.locator('tr[data-counter="signups"]').getByText('7', { exact: true }).waitFor();
    await page
      .locator('#watch-hint')
      .getByText(/^Listed by the store/)
      .waitFor();
    await server.dibs.locks.release(lease);
    await page.locator('tr[data-lock="nightly-export"]').getByText('free').waitFor();
    await page.locator('tr[data-sale="launch"]').waitFor();
    await accessibleAndPhoneSized('40-overview');
  });

  it('used only the public API with the logged-in key, and never left the origin', async () => {
    const origin = new URL(server.url).origin;
    assert.deepEqual(
      requests
        .map((r) => r.url())
        .filter((url) => !url.startsWith(origin) && !url.startsWith('data:') && !url.startsWith('blob:')),
      [],
    );
    const calls = requests.filter((r) => new URL(r.url()).pathname.startsWith('/v1/'));
    const paths = new Set(
      calls.map(
        (r) =>
          `${r.method()} ${new URL(r.url()).pathname.replace(/hold_\w+/, ':hold').replace(/[0-9a-f]{16}$/, ':id')}`,
      ),
    );
    for (const expected of [
      'GET /v1/sales/launch/holds',
      'POST /v1/reservations/:hold/cancel',
      'PATCH /v1/sales/launch',
      'POST /v1/sales/launch/cancel',
      'GET /v1/sales/launch/waiting-room',
      'GET /v1/pools/spring/audit',
      'DELETE /v1/keys/:id',
      'GET /v1/locks',
      'GET /v1/counters',
    ]) {
      assert.ok(paths.has(expected), `${expected} among ${[...paths].join(', ')}`);
    }
    for (const call of calls) assert.equal(call.headers().authorization, `Bearer ${adminKey}`, call.url());
  });
});
