/**
 * Headless Chromium for the dashboard tests: Debian's `chromium` package driven by playwright-core.
 * Never a browser download — .ci/run installs the package with apt-get when it is missing.
 * Without Chromium the tests skip loudly on a developer machine and FAIL under CI=true.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

export const CHROMIUM = process.env.DIBS_CHROMIUM ?? '/usr/bin/chromium';

/** Where screenshots go (gitignored). */
export const ARTIFACTS = new URL('../../test-artifacts/dashboard/', import.meta.url).pathname;

/**
 * `undefined` when Chromium is there; otherwise the reason to skip. Under CI a missing browser is
 * an error, so the suite cannot pass by silently testing nothing.
 */
export function chromiumMissing(): string | undefined {
  if (existsSync(CHROMIUM)) return undefined;
  const reason = `${CHROMIUM} is missing: install Debian's chromium package (apt-get install -y chromium; .ci/run does this)`;
  if (process.env.CI === 'true') throw new Error(`CI=true and ${reason}`);
  console.warn(`\n!!! SKIPPING the dashboard browser tests: ${reason}\n`);
  return reason;
}

export interface Browser {
  context: BrowserContext;
  close(): Promise<void>;
}

/** A fresh headless Chromium with its own throw-away profile and no background network. */
export async function launchChromium(): Promise<Browser> {
  const profile = mkdtempSync(join(tmpdir(), 'dibs-chromium-'));
  mkdirSync(ARTIFACTS, { recursive: true });
  // Playwright takes the profile as launchPersistentContext's first argument (it refuses a
  // --user-data-dir flag in args); every other flag is passed as is.
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-quic',
      '--no-first-run',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
    ],
    acceptDownloads: true,
    viewport: { width: 1280, height: 900 },
    timeout: 60_000,
  });
  return {
    context,
    close: async () => {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

const AXE_SOURCE = readFileSync(createRequire(import.meta.url).resolve('axe-core/axe.min.js'), 'utf8');

/**
 * axe-core's WCAG 2.1 A/AA rules on the page as it is now, in the given colour scheme: the
 * violations of impact serious or critical (id, impact, first nodes). axe runs through the
 * DevTools protocol (page.evaluate), which the page's CSP does not block.
 */
export async function seriousAxeViolations(page: Page, colorScheme: 'light' | 'dark' = 'light'): Promise<unknown[]> {
  await page.emulateMedia({ colorScheme });
  try {
    return (await page.evaluate(`${AXE_SOURCE}
      axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })
        .then((r) => r.violations.filter((v) => v.impact === 'serious' || v.impact === 'critical')
          .map((v) => ({ id: v.id, impact: v.impact, nodes: v.nodes.slice(0, 3).map((n) => n.target.join(' ')) })))`)) as unknown[];
  } finally {
    await page.emulateMedia({ colorScheme: 'light' });
  }
}

/**
 * axe in both schemes (no serious or critical violation), and at a phone's width (390 px) nothing
 * wider than the screen; a phone-sized screenshot `<name>-phone.png` in ARTIFACTS.
 */
export async function assertAccessibleAndPhoneSized(page: Page, name: string): Promise<void> {
  for (const scheme of ['light', 'dark'] as const) {
    const violations = await seriousAxeViolations(page, scheme);
    assert.deepEqual(violations, [], `${name} (${scheme}): ${JSON.stringify(violations, null, 1)}`);
  }
  const viewport = page.viewportSize();
  await page.setViewportSize({ width: 390, height: 844 });
  try {
    await page.waitForTimeout(100);
    await page.screenshot({ path: join(ARTIFACTS, `${name}-phone.png`), fullPage: true });
    const overflow = Number(
      await page.evaluate('document.documentElement.scrollWidth - document.documentElement.clientWidth'),
    );
    const culprits =
      overflow > 0
        ? await page.evaluate(`[...document.querySelectorAll('body *')].filter((el) => el.getBoundingClientRect().right > document.documentElement.clientWidth + 1)
        .slice(0, 5).map((el) => el.tagName + '#' + el.id + '.' + el.className + ' ' + Math.round(el.getBoundingClientRect().right))`)
        : [];
    assert.ok(overflow <= 0, `${name} is ${overflow}px wider than a 390px phone screen: ${JSON.stringify(culprits)}`);
  } finally {
    if (viewport) await page.setViewportSize(viewport);
  }
}
