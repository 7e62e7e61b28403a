/**
 * The rate-limits panel in headless Chromium, as an operator would use it: define a token bucket
 * with the form, see a limit another client defined and each limit's shared allowance, check a
 * key's allowance without taking, spend it until it is denied with its wait, reset the key, edit the limit (the form filled in from the row), refuse a take no
 * definition can admit, delete a limit (asked once more). Every step is checked against the API as
 * well as the page. axe (no serious or critical violation, light and dark) and a 390 px phone width.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import type { Page } from 'playwright-core';
import { openDibs } from '../../src/index.js';
import { createApiKey } from '../../src/service/auth/keys.js';
import { startServer, type RunningServer } from '../../src/service/server.js';
import { tempSqliteStore } from '../support/sqlite.js';
import { ARTIFACTS, assertAccessibleAndPhoneSized, chromiumMissing, launchChromium, type Browser } from './browser.js';

const skip = chromiumMissing();

describe('rate-limits panel (headless Chromium)', { skip, timeout: 120_000 }, () => {
  const temp = tempSqliteStore();
  let server: RunningServer;
  let browser: Browser;
  let page: Page;

  before(async () => {
    const dibs = await openDibs(temp.store);
    const adminKey = (await createApiKey(dibs.backend.service!, { name: 'operator', scopes: ['admin'] })).key;
    await dibs.close();
    server = await startServer({ store: temp.store, port: 0, host: '127.0.0.1', logger: false });
    browser = await launchChromium();
    page = await browser.context.newPage();
    page.setDefaultTimeout(20_000);
    await page.goto(server.url);
    await page.getByLabel('API key', { exact: true }).fill(adminKey);
    await page.getByRole('button', { name: 'Log in' }).click();
    await page.getByRole('heading', { name: 'Rate limits' }).waitFor();
  });

  after(async () => {
    await browser?.close();
    await server?.close();
    temp.cleanup();
  });

  const row = (name: string) => page.locator(`#limit-rows tr[data-limit="${name}"]`);
  const result = () => page.locator('#limit-result');
  const tryResult = () => page.locator('#limit-try-result');
  const define = () => page.getByRole('form', { name: 'Define or change a limit' });
  const allowance = () => page.getByRole('form', { name: "A key's allowance" });

  it('defines, uses, resets, edits and deletes limits', async () => {
    await page.locator('#limit-rows').getByText('No limits yet').waitFor();
    await page.getByRole('link', { name: 'Rate limits' }).click();

    // define a token bucket: 3 per minute, bursts of 2
    await define().getByLabel('Limit name').fill('chat-api');
    await define().getByLabel('Algorithm').selectOption('token-bucket');
    await define().getByLabel('Allowed per period').fill('3');
    await define().getByLabel('Period', { exact: true }).fill('1');
    await define().getByLabel('Period unit').selectOption({ label: 'minutes' });
    await define()
      .getByLabel(/^Burst/)
      .fill('2');
    await define().getByRole('button', { name: 'Save limit' }).click();
    await result().getByText('Defined chat-api: 3 per minute, refilled continuously; bursts up to 2.').waitFor();
    await row('chat-api').getByText('token bucket').waitFor();
    const defined = await server.dibs.limits.get('chat-api');
    assert.deepEqual(
      [defined.algorithm, defined.limit, defined.periodMs, defined.burst],
      ['token-bucket', 3, 60_000, 2],
    );

    // another client defines a daily quota: the panel lists it with its definition
    await server.dibs.limits.create({ name: 'sms', algorithm: 'quota', limit: 10_000, periodMs: 86_400_000 });
    await row('sms').getByText('10,000 per calendar day (UTC-aligned)').waitFor();

    // the shared allowance of each limit is shown as it is now, read without taking
    await row('chat-api').getByRole('cell', { name: '2 left' }).waitFor();
    await server.dibs.limits.take('chat-api', 2);
    await row('chat-api').getByRole('cell', { name: 'none left' }).waitFor();

    // spend alice's allowance: checking takes nothing; two takes (the burst), then a denial with the wait
    await allowance().getByLabel('Limit', { exact: true }).selectOption('chat-api');
    await allowance().getByLabel(/^Key/).fill('alice');
    await allowance().getByRole('button', { name: 'Check without taking' }).click();
    await tryResult().getByText('chat-api, key alice: 2 left now; nothing taken.').waitFor();
    await allowance().getByRole('button', { name: 'Take' }).click();
    await tryResult().getByText('Allowed: 1 taken for key alice; 1 left now.').waitFor();
    for (let i = 0; i < 2; i++) {
      await allowance().getByRole('button', { name: 'Check without taking' }).click();
      await tryResult().getByText('chat-api, key alice: 1 left now; nothing taken.').waitFor();
    }
    await allowance().getByRole('button', { name: 'Take' }).click();
    await tryResult().getByText('Allowed: 1 taken for key alice; 0 left now.').waitFor();
    await allowance().getByRole('button', { name: 'Take' }).click();
    await tryResult()
      .getByText(/^Denied for key alice: 0 left now; 1 would be allowed in \d+s\.$/)
      .waitFor();
    await allowance().getByRole('button', { name: 'Check without taking' }).click();
    await tryResult()
      .getByText(/^chat-api, key alice: 0 left now; 1 would be allowed in \d+s\. Nothing taken\.$/)
      .waitFor();
    assert.equal((await server.dibs.limits.take('chat-api', 1, { key: 'alice' })).allowed, false, 'the store agrees');
    assert.equal((await server.dibs.limits.take('chat-api', 1, { key: 'bob' })).allowed, true, 'other keys are apart');

    // more units than the burst can never be admitted: a clear refusal, nothing spent
    await allowance().getByLabel('Units').fill('5');
    await allowance().getByRole('button', { name: 'Take' }).click();
    await tryResult().getByText("n: 5 can never be admitted by limit 'chat-api' (at most 2 at once)").waitFor();
    await allowance().getByLabel('Units').fill('1');

    // reset alice: her next take starts from a full allowance
    await allowance().getByRole('button', { name: 'Reset this key' }).click();
    await tryResult().getByText('Reset key alice of chat-api: its next take starts from a full allowance.').waitFor();
    await allowance().getByRole('button', { name: 'Take' }).click();
    await tryResult().getByText('Allowed: 1 taken for key alice; 1 left now.').waitFor();
    await page.screenshot({ path: join(ARTIFACTS, '60-limits-panel.png'), fullPage: true });

    // edit: the row fills the form in; 30 per minute is saved as a change, not a new limit
    await row('chat-api').getByRole('button', { name: 'Edit limit chat-api' }).click();
    assert.equal(await define().getByLabel('Limit name').inputValue(), 'chat-api');
    assert.equal(await define().getByLabel('Allowed per period').inputValue(), '3');
    assert.equal(await define().getByLabel('Period', { exact: true }).inputValue(), '1');
    assert.equal(await define().getByLabel('Period unit').inputValue(), '60000');
    assert.equal(
      await define()
        .getByLabel(/^Burst/)
        .inputValue(),
      '2',
    );
    await define().getByLabel('Allowed per period').fill('30');
    await define()
      .getByLabel(/^Burst/)
      .fill('10');
    await define().getByRole('button', { name: 'Save limit' }).click();
    await result().getByText('Changed chat-api: 30 per minute, refilled continuously; bursts up to 10.').waitFor();
    await row('chat-api').getByText('30 per minute, refilled continuously; bursts up to 10').waitFor();
    const changed = await server.dibs.limits.get('chat-api');
    assert.deepEqual([changed.limit, changed.burst, changed.periodMs], [30, 10, 60_000]);

    // delete asks once more
    await row('sms').getByRole('button', { name: 'Delete limit sms' }).click();
    await row('sms').getByRole('button', { name: 'Confirm deleting limit sms' }).click();
    await result().getByText("Deleted sms and every key's count.").waitFor();
    await row('sms').waitFor({ state: 'detached' });
    await assert.rejects(server.dibs.limits.get('sms'), (e: { code?: string }) => e.code === 'not_found');
    assert.equal(await row('chat-api').count(), 1);

    await assertAccessibleAndPhoneSized(page, 'limits-panel');
  });
});
