// The browser tests' Chromium: Debian's headless Chromium driven by playwright-core, one tab
// against the console of a test app's admin listener. Every tab writes what should never happen
// into the test's `problems`: a script error, a console error, a Content-Security-Policy
// violation (reported from inside the page) and a request to anywhere but the listener.
import { existsSync } from 'node:fs';
import { type Browser, type BrowserContext, chromium, type Page } from 'playwright-core';
import { ADMIN_TOKEN } from './app.ts';

export const CHROMIUM = '/usr/bin/chromium';
/** Browser tests are `describe.skipIf(!haveChromium)`: a machine without Chromium skips them. */
export const haveChromium = existsSync(CHROMIUM);
if (!haveChromium) console.warn(`browser tests skipped: ${CHROMIUM} not found`);

export function launchChromium(): Promise<Browser> {
  return chromium.launch({
    executablePath: CHROMIUM,
    headless: true,
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
  });
}

export interface TabOptions {
  /** Where the tab writes its problems; the test expects it empty (or exactly what it provoked). */
  problems: string[];
  viewport?: { width: number; height: number };
  /** Console errors the test provokes and does not count as problems. */
  expectedErrors?: RegExp;
}

/** A new context and page on `base` (the admin listener's URL), watched for problems. */
export async function openTab(
  browser: Browser,
  base: string,
  opts: TabOptions,
): Promise<{ context: BrowserContext; page: Page }> {
  const { problems } = opts;
  // Downloads are accepted (Playwright's default): the CSV tests read what the page saved.
  const context = await browser.newContext({ viewport: opts.viewport ?? { width: 1400, height: 1000 } });
  await context.addInitScript(() => {
    document.addEventListener('securitypolicyviolation', (e) => {
      console.error(`CSP violation: ${e.violatedDirective} ${e.blockedURI}`);
    });
  });
  const page = await context.newPage();
  page.on('console', (msg) => {
    if (msg.type() === 'error' && !opts.expectedErrors?.test(msg.text())) problems.push(msg.text());
  });
  page.on('pageerror', (err) => problems.push(String(err)));
  page.on('request', (req) => {
    if (!req.url().startsWith(base) && !req.url().startsWith('data:'))
      problems.push(`outside request ${req.url()}`);
  });
  return { context, page };
}

/** Signs in on the console's form and waits for the overview. */
export async function signIn(page: Page, base: string, token = ADMIN_TOKEN): Promise<void> {
  await page.goto(`${base}/console`);
  await page.fill('#token', token);
  await page.click('button[type=submit]');
  await page.waitForSelector('nav a[data-nav=overview].active');
}
