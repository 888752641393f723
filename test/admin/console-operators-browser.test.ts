// The console as named operators use it (docs/reference/operators-and-audit.md#operators-and-roles, docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments), in a real headless Chromium:
// a viewer sees who is signed in and no control that changes anything; an admin's top-up asks
// for confirmation (cancel sends nothing), a double click sends once, the wallet opens on the
// mode that has money, and the audit page shows the change with the operator's name. Saves
// docs/console-viewer.png and docs/console-audit.png.
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { createMerchant, createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { haveChromium, launchChromium, openTab, signIn } from '../helpers/browser.ts';
import { addOperator } from '../helpers/operators.ts';

const DOCS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs');

describe.skipIf(!haveChromium)('the console for named operators', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let page: Page;
  let m: Merchant;
  let viewerToken: string;
  let adminToken: string;
  const dialogs: string[] = [];
  let answer: 'accept' | 'dismiss' = 'accept';
  const problems: string[] = [];

  beforeAll(async () => {
    t = await createTestApp();
    await t.admin.listen({ host: '127.0.0.1', port: 0 });
    const addr = t.admin.server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    m = await createMerchant(t, { topup: { test: 5 } });
    viewerToken = (await addOperator(t.admin, 'vera', 'viewer')).token;
    adminToken = (await addOperator(t.admin, 'ada', 'admin')).token;
    browser = await launchChromium();
    ({ page } = await openTab(browser, base, { problems }));
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void (answer === 'accept' ? d.accept() : d.dismiss());
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const ledgerCount = async () =>
    (
      await t.ctx.db.query<{ n: number }>(
        'select count(*)::int as n from wallet_ledger where customer_id = $1',
        [m.customerId],
      )
    ).rows[0]!.n;

  const signInAs = (token: string) => signIn(page, base, token);

  test('a viewer sees who is signed in and no control that changes anything', async () => {
    await signInAs(viewerToken);
    expect(await page.textContent('nav .who')).toBe('vera (viewer)');
    await page.goto(`${base}/console#/customers/${m.customerId}`);
    await page.waitForSelector('[data-table=keys]');
    for (const selector of [
      '[data-form=topup]',
      '[data-form=adjust]',
      '[data-form=issue-key]',
      '[data-form=import]',
      `[data-revoke="${m.keyId}"]`,
      `[data-reroll="${m.keyId}"]`,
    ]) {
      expect(await page.locator(selector).isVisible(), selector).toBe(false);
    }
    expect(await page.locator('[data-table=wallets]').isVisible()).toBe(true);
    mkdirSync(DOCS, { recursive: true });
    await page.screenshot({ path: join(DOCS, 'console-viewer.png'), fullPage: true });
    await page.goto(`${base}/console#/operators`);
    await page.waitForSelector('[data-table=operators]');
    expect(await page.locator('[data-form=add-operator]').isVisible()).toBe(false);
    await page.click('nav button.link');
    await page.waitForSelector('form.signin');
  });

  test('an admin top-up opens on the mode with money, asks first, and a double click sends once', async () => {
    await signInAs(adminToken);
    expect(await page.textContent('nav .who')).toBe('ada (admin)');
    await page.goto(`${base}/console#/customers/${m.customerId}`);
    await page.waitForSelector('[data-form=topup]');
    // Only the test wallet has money: both the form and the ledger open on it.
    expect(await page.inputValue('[data-form=topup] select[name=mode]')).toBe('test');
    expect(await page.inputValue('select[aria-label="ledger mode"]')).toBe('test');
    const before = await ledgerCount();

    answer = 'dismiss';
    await page.fill('[data-form=topup] input[name=usd]', '2.5');
    await page.click('[data-form=topup] button[type=submit]');
    expect(dialogs).toEqual([`Top up the test wallet of customer ${m.customerId} by $2.5?`]);
    expect(await ledgerCount()).toBe(before);

    answer = 'accept';
    await page.dblclick('[data-form=topup] button[type=submit]');
    await expect
      .poll(() => page.textContent('[data-flash]'))
      .toBe('Topped up $2.5: the test balance is $7.5.');
    expect(await ledgerCount()).toBe(before + 1);
    expect(dialogs).toHaveLength(2);
    await expect
      .poll(() => page.textContent('[data-table=ledger] tbody tr:first-child [data-cell=actor]'))
      .toBe('ada');
  });

  test('the audit page shows the top-up with the operator who made it', async () => {
    await page.goto(`${base}/console#/audit?customer_id=${m.customerId}`);
    await page.waitForSelector('[data-table=audit] tbody tr[data-action]');
    const first = page.locator('[data-table=audit] tbody tr').first();
    expect(await first.getAttribute('data-action')).toBe('wallet.topup');
    expect(await first.locator('[data-cell=actor]').textContent()).toBe('ada');
    expect(await first.textContent()).toContain('"amount_usd":2.5');
    await page.screenshot({ path: join(DOCS, 'console-audit.png'), fullPage: true });
    expect(problems).toEqual([]);
  });
});
