// The customer page's account controls in a real headless Chromium against the real
// admin listener: disable and enable behind a confirmation (the audit rows written, the key
// refused then accepted), a disabled customer's page saying so and hiding what cannot work, the
// plan changed through its form, amounts checked before the confirmation is asked ("Top up by
// $-3?" never shows), and amounts printed `-$0.05`. Saves docs/console-customer.png.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  adminCall,
  bearer,
  createMerchant,
  createTestApp,
  type Merchant,
  type TestApp,
} from '../helpers/app.ts';
import { haveChromium, launchChromium, openTab, signIn } from '../helpers/browser.ts';

const DOCS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs');

describe.skipIf(!haveChromium)('the customer page in Chromium', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let page: Page;
  let m: Merchant;
  const dialogs: string[] = [];
  const problems: string[] = [];
  const sent: string[] = [];

  beforeAll(async () => {
    t = await createTestApp();
    await t.admin.listen({ host: '127.0.0.1', port: 0 });
    const addr = t.admin.server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    m = await createMerchant(t, { topup: { test: 5 } });
    browser = await launchChromium();
    ({ page } = await openTab(browser, base, { problems }));
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.accept();
    });
    page.on('request', (req) => {
      if (req.method() !== 'GET') sent.push(`${req.method()} ${new URL(req.url()).pathname}`);
    });
    await signIn(page, base);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const me = (key: string) => t.api.inject({ method: 'GET', url: '/v1/me', headers: bearer(key) });
  const actions = async () =>
    (
      await adminCall<{ events: { action: string; actor: string }[] }>(
        t,
        'GET',
        `/admin/v1/audit?customer_id=${m.customerId}`,
      )
    ).events.map((e) => e.action);
  // A fresh document each time: going to the same address with only its hash again would keep
  // the last test's page (and its flash) in place.
  const open = async () => {
    await page.goto('about:blank');
    await page.goto(`${base}/console#/customers/${m.customerId}`);
    await page.waitForSelector('[data-table=ledger] tbody tr');
  };

  test('a refused amount is said before any confirmation, and nothing is sent', async () => {
    await open();
    dialogs.length = 0;
    sent.length = 0;
    await page.fill('[data-form=topup] input[name=usd]', '-3');
    await page.click('[data-form=topup] button[type=submit]');
    await expect
      .poll(() => page.textContent('[data-form=topup] ~ .status'))
      .toBe('A top-up is more than $0 (an adjustment can take money away).');
    await page.fill('[data-form=topup] input[name=usd]', '1.1234567');
    await page.click('[data-form=topup] button[type=submit]');
    await expect
      .poll(() => page.textContent('[data-form=topup] ~ .status'))
      .toBe('"1.1234567" is not a dollar amount with at most 6 decimals.');
    await page.fill('[data-form=adjust] input[name=usd]', '0');
    await page.fill('[data-form=adjust] input[name=reason]', 'nothing');
    await page.click('[data-form=adjust] button[type=submit]');
    await expect.poll(() => page.textContent('[data-form=topup] ~ .status')).toBe('An adjustment is not $0.');
    expect(dialogs).toEqual([]);
    expect(sent).toEqual([]);
  });

  test('a negative amount reads -$0.05, in the confirmation, the flash and the ledger', async () => {
    await open();
    dialogs.length = 0;
    await page.selectOption('[data-form=adjust] select[name=mode]', 'test');
    await page.fill('[data-form=adjust] input[name=usd]', '-0.05');
    await page.fill('[data-form=adjust] input[name=reason]', 'a goodwill correction');
    await page.click('[data-form=adjust] button[type=submit]');
    await page.waitForSelector('[data-flash]');
    expect(dialogs).toEqual([`Adjust the test wallet of customer ${m.customerId} by -$0.05?`]);
    expect(await page.textContent('[data-flash]')).toBe('Adjusted by -$0.05: the test balance is $4.95.');
    await page.waitForSelector('[data-table=ledger] tbody tr td.num');
    expect(await page.textContent('[data-table=ledger] tbody tr:first-child td:nth-child(3)')).toBe('-$0.05');
    expect(await page.innerHTML('body')).not.toContain('$-');
  });

  test('the plan is changed through its form after a confirmation, and audited', async () => {
    await open();
    dialogs.length = 0;
    await page.click('#plan details:first-of-type summary');
    await page.fill('[data-form=plan] input[name=label]', 'silver');
    await page.fill('[data-form=plan] input[name=daily_limit]', '20');
    await page.fill('[data-form=plan] input[name=per_request_usd]', '0.25');
    await page.click('[data-form=plan] button[type=submit]');
    await page.waitForSelector('[data-flash]:text-is("Plan set.")');
    expect(dialogs).toEqual([
      `Set the plan of customer ${m.customerId} to "silver": 20 a day included, $0.25 a request, overage billed, active?`,
    ]);
    const c = await adminCall<{ plan: unknown }>(t, 'GET', `/admin/v1/customers/${m.customerId}`);
    expect(c.plan).toEqual({
      label: 'silver',
      daily_limit: 20,
      per_request_usd: 0.25,
      overage: true,
      active: true,
    });
    expect((await actions())[0]).toBe('plan.set');
  });

  test('disable and enable, each after a confirmation: the banner, the hidden actions, the key, the audit', async () => {
    await open();
    dialogs.length = 0;
    expect(await page.isVisible('[data-banner=disabled]')).toBe(false);
    await page.click('[data-action=disable]');
    await page.waitForSelector('[data-banner=disabled]');
    expect(dialogs[0]).toMatch(new RegExp(`^Disable customer ${m.customerId} \\(`));
    expect(await page.textContent('[data-banner=disabled] strong')).toBe(
      'Disabled since 2026-11-22 09:00:00 UTC.',
    );
    expect((await me(m.key)).statusCode).toBe(403);
    expect((await actions())[0]).toBe('customer.disable');
    // What cannot work for a disabled customer is not offered; a correcting adjustment still is.
    for (const hidden of [
      '[data-form=issue-key]',
      '[data-form=topup]',
      '[data-form=import]',
      '[data-reroll]',
    ])
      expect(await page.isVisible(hidden), hidden).toBe(false);
    expect(await page.isVisible('[data-form=adjust]')).toBe(true);
    expect(await page.isVisible('[data-action=disable]')).toBe(false);
    await page.screenshot({ path: join(DOCS, 'console-customer.png'), fullPage: false });

    await page.click('[data-action=enable]');
    await page.waitForSelector('[data-action=disable]');
    expect(dialogs[1]).toMatch(new RegExp(`^Enable customer ${m.customerId} \\(`));
    expect(await page.textContent('[data-flash]')).toBe('Customer enabled: its keys work again.');
    expect(await page.isVisible('[data-banner=disabled]')).toBe(false);
    expect(await page.isVisible('[data-form=topup]')).toBe(true);
    expect((await me(m.key)).statusCode).toBe(200);
    expect((await actions()).slice(0, 2)).toEqual(['customer.enable', 'customer.disable']);
    expect(problems).toEqual([]);
  });

  test('the ledger, jobs and audit pages download their CSV with the filters shown', async () => {
    const download = async (selector: string) => {
      const [file] = await Promise.all([page.waitForEvent('download'), page.click(selector)]);
      return { name: file.suggestedFilename(), text: readFileSync((await file.path())!, 'utf8') };
    };
    await open();
    await page.selectOption('select[aria-label="ledger mode"]', 'test');
    const ledger = await download('[data-download=ledger]');
    expect(ledger.name).toBe(`ledger-${m.customerId}-test.csv`);
    expect(ledger.text.split('\r\n')[0]).toBe(
      'entry_id,at,kind,amount_usd,balance_after_usd,actor,request_id,note,reference',
    );
    expect(ledger.text).toContain(',adjustment,-0.05,4.95,root,');

    await page.goto(`${base}/console#/audit?customer_id=${m.customerId}&action=customer.enable`);
    await page.waitForSelector('[data-table=audit] tbody tr');
    const audit = await download('[data-download=audit]');
    expect(audit.name).toBe('audit.csv');
    const rows = audit.text.trim().split('\r\n');
    expect(rows).toHaveLength(2);
    expect(rows[1]).toContain(',customer.enable,');

    await page.goto(`${base}/console#/jobs?customer_id=${m.customerId}`);
    await page.waitForSelector('[data-table=jobs]');
    const jobs = await download('[data-download=jobs]');
    expect(jobs.name).toBe('jobs.csv');
    expect(jobs.text).toBe(`${jobs.text.split('\r\n')[0]}\r\n`);
    expect(problems).toEqual([]);
  });

  test('the ledger shows 20 entries, then the older ones on "Older entries"; another mode starts over', async () => {
    const other = await createMerchant(t);
    for (let i = 1; i <= 25; i++)
      await adminCall(t, 'POST', `/admin/v1/customers/${other.customerId}/wallet/topup`, {
        mode: 'test',
        usd: i,
      });
    const rows = '[data-table=ledger] tbody tr';
    const older = 'button:text-is("Older entries")';
    await page.goto('about:blank');
    await page.goto(`${base}/console#/customers/${other.customerId}`);
    await page.waitForSelector(rows);
    // Only the test wallet has money: the ledger opens on it, newest first, one page of 20.
    expect(await page.inputValue('select[aria-label="ledger mode"]')).toBe('test');
    expect(await page.locator(rows).count()).toBe(20);
    expect(await page.textContent(`${rows}:first-child td:nth-child(3)`)).toBe('$25');
    await page.click(older);
    await expect.poll(() => page.locator(rows).count()).toBe(25);
    const amounts = await page.locator(`${rows} td:nth-child(3)`).allTextContents();
    expect(new Set(amounts).size).toBe(25);
    expect(amounts.at(-1)).toBe('$1');
    expect(await page.isVisible(older)).toBe(false);
    // The live wallet has no entry: the table starts over with its note and no button.
    await page.selectOption('select[aria-label="ledger mode"]', 'live');
    await expect.poll(() => page.textContent(rows)).toBe('no entries');
    expect(await page.locator(rows).count()).toBe(1);
    expect(await page.isVisible(older)).toBe(false);
    expect(problems).toEqual([]);
  });
});
