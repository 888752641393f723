// The console's webhooks across customers and the overview's mode (issue 36), in a real headless
// Chromium against the real admin listener: a customer whose receiver answers 503 until its
// event fails and another whose receiver delivers; the overview opens on the mode in trouble
// (test: its quarantine and its failed event), with both modes in a line above, and its failed
// webhooks card leads to the Webhooks page, which shows the failed event with its customer and
// the receiver's answer and redelivers it after a confirmation; the customer page shows the
// receiver with its token masked and its last 24 hours. Saves docs/console-webhooks.png.
import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN_TOKEN, createMerchant, type Merchant } from './helpers/app.ts';
import { eventKit } from './helpers/event-kit.ts';
import { redeem, uniqueCode } from './helpers/redeem.ts';

const CHROMIUM = '/usr/bin/chromium';
const haveChromium = existsSync(CHROMIUM);
const DOCS = join(dirname(fileURLToPath(import.meta.url)), '..', 'docs');

const kit = eventKit();

describe.skipIf(!haveChromium)('webhooks and the overview in Chromium', () => {
  let base: string;
  let browser: Browser;
  let page: Page;
  let failing: Merchant;
  let failedId: string;
  const dialogs: string[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    const t = kit.t;
    await t.admin.listen({ host: '127.0.0.1', port: 0 });
    const addr = t.admin.server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;

    failing = await createMerchant(t);
    const healthy = await createMerchant(t);
    const bad = await kit.newReceiver();
    bad.fallback = 503;
    bad.secret = await kit.register(failing.key, `${bad.url}?token=s3cret`);
    const good = await kit.newReceiver();
    good.secret = await kit.register(healthy.key, good.url);
    failedId = (await kit.eventOfJob(failing, await kit.finishedJob(failing))).id;
    await kit.eventOfJob(healthy, await kit.finishedJob(healthy));
    await kit.deliver();
    for (const wait of [10, 60, 300]) {
      kit.clock.advance(wait * 1000);
      await kit.deliver();
    }
    // A test-mode code whose outcome is unknown: quarantined.
    const timeout = await redeem(t, healthy.key, { player_id: '5123456789', codes: [uniqueCode('TIMEOUT')] });
    expect(timeout.json().codes[0].disposition).toBe('quarantined');

    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking'],
    });
    const context = await browser.newContext({ viewport: { width: 1400, height: 900 } });
    page = await context.newPage();
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.accept();
    });
    page.on('pageerror', (err) => problems.push(String(err)));
    page.on('console', (msg) => {
      if (msg.type() === 'error') problems.push(msg.text());
    });
    await page.goto(`${base}/console`);
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('button[type=submit]');
    await page.waitForSelector('nav a[data-nav=overview].active');
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  const cardValue = (name: string) => page.textContent(`[data-card=${name}] .big`);

  test('the overview opens on the mode in trouble (test here), with both modes in a line above the cards', async () => {
    await page.waitForSelector('[data-card=webhooks]');
    expect(await page.inputValue('[data-select=mode]')).toBe('test');
    expect(await cardValue('quarantine')).toBe('1');
    expect(await cardValue('webhooks')).toBe('1');
    const modes = await page.textContent('[data-modes]');
    expect(modes).toContain('live: 0 quarantined · 0 failed webhooks (24 h)');
    expect(modes).toContain('test: 1 quarantined · 1 failed webhooks (24 h)');
    await page.selectOption('[data-select=mode]', 'live');
    await expect.poll(() => page.evaluate(() => location.hash)).toBe('#/overview?mode=live');
    await expect.poll(() => cardValue('quarantine')).toBe('0');
    expect(await cardValue('webhooks')).toBe('0');
    await page.selectOption('[data-select=mode]', 'test');
    await expect.poll(() => page.evaluate(() => location.hash)).toBe('#/overview?mode=test');
    await expect.poll(() => cardValue('quarantine')).toBe('1');
    expect(await page.textContent('[data-card=webhooks] h3')).toBe('Failed webhooks, 24 h');
    // The cards lead to pages of the same mode.
    expect(await page.getAttribute('[data-card=queue] a', 'href')).toBe('#/jobs?status=queued&mode=test');
    await page.selectOption('[data-select=mode]', 'all');
    await expect.poll(() => page.evaluate(() => location.hash)).toBe('#/overview?mode=all');
    await expect.poll(() => cardValue('quarantine')).toBe('1');
  });

  test("the failed webhooks card leads to the Webhooks page: the event, its customer, the receiver's answer", async () => {
    await page.goto(`${base}/console#/overview?mode=test`);
    await page.click('[data-card=webhooks] .big a');
    await page.waitForSelector(`[data-table=webhook-events] tr[data-event=${failedId}]`);
    expect(await page.evaluate(() => location.hash)).toBe('#/webhooks?state=failed&mode=test');
    expect(await page.getAttribute('nav a[data-nav=webhooks]', 'class')).toBe('active');
    const row = `tr[data-event=${failedId}]`;
    expect(await page.locator('[data-table=webhook-events] tbody tr').count()).toBe(1);
    expect(await page.textContent(`${row} [data-state]`)).toBe('failed');
    expect(await page.textContent(`${row} [data-cell=last-error]`)).toBe('answered 503');
    expect(await page.getAttribute(`${row} a[href^="#/customers/"]`, 'href')).toBe(
      `#/customers/${failing.customerId}`,
    );
    expect(await page.locator(`${row} [data-attempt]`).count()).toBe(4);
    expect(await page.textContent('body')).not.toMatch(/dropped|failing/i);
    await page.screenshot({ path: join(DOCS, 'console-webhooks.png'), fullPage: true });

    // Delivered events are one choice away.
    await page.selectOption('[data-form=webhook-filters] select[name=state]', 'delivered');
    await page.click('[data-form=webhook-filters] button[type=submit]');
    await expect.poll(() => page.evaluate(() => location.hash)).toBe('#/webhooks?state=delivered&mode=test');
    await page.waitForSelector('[data-table=webhook-events] [data-state=delivered]');

    // A redelivery asks first.
    await page.goto(`${base}/console#/webhooks`);
    await page.click(`[data-redeliver=${failedId}]`);
    await expect.poll(() => page.textContent('.view .status')).toContain(`Redelivery of ${failedId} queued`);
    expect(dialogs.at(-1)).toBe(`Send ${failedId} once more to the customer's current webhook URL?`);
  });

  test('the customer page shows its receiver with the token masked and its last 24 hours', async () => {
    await page.goto(`${base}/console#/customers/${failing.customerId}`);
    await page.waitForSelector('[data-table=receivers] [data-cell=url]');
    const url = await page.textContent('[data-table=receivers] [data-cell=url]');
    expect(url).toMatch(/^https:\/\/127\.0\.0\.1:\d+\/hook\?token=\*\*\*$/);
    expect(await page.textContent('[data-table=receivers] [data-cell=rate]')).toBe('0% (0/4)');
    expect(await page.content()).not.toContain('s3cret');
    await page.click('nav.sections [data-goto=webhooks]');
    expect(problems).toEqual([]);
  });

  test("the customers list shows each mode's health: the failing receiver since when, refusals today", async () => {
    await page.goto(`${base}/console#/customers`);
    const row = `[data-table=customers] tbody tr:has(a[href="#/customers/${failing.customerId}"])`;
    await page.waitForSelector(row);
    expect(await page.textContent(`${row} [data-health=test]`)).toBe(
      'webhook failing ×4 since 2026-11-22 09:00:00 UTCnone refused today',
    );
    expect(await page.textContent(`${row} [data-health=live]`)).toBe('no webhooknone refused today');
    await page.screenshot({ path: join(DOCS, 'console-customers-health.png'), fullPage: false });
    expect(problems).toEqual([]);
  });

  test('the customer page opens on its health: the failing test receiver first, since when, and its refusals today', async () => {
    const missing = await kit.t.api.inject({
      method: 'GET',
      url: '/v1/jobs/job_notThere',
      headers: { authorization: `Bearer ${failing.key}` },
    });
    expect(missing.statusCode).toBe(404);
    await kit.t.api.requestLog.flush();
    await page.goto(`${base}/console#/overview`);
    await page.goto(`${base}/console#/customers/${failing.customerId}`);
    await page.waitForSelector('[data-table=health] tbody tr');
    const rows = await page.$$eval('[data-table=health] tbody tr', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '')),
    );
    expect(rows).toEqual([
      [
        'test look here first',
        expect.stringMatching(/^https:\/\/127\.0\.0\.1:\d+\/hook\?token=\*\*\*$/),
        '0% (0/4)',
        '4',
        '2026-11-22 09:00:00 UTC',
        'not_found ×1',
      ],
      ['live', 'none registered', '—', '—', '—', 'none'],
    ]);
    // The event log below opens on the mode in trouble.
    await page.waitForSelector('[data-section=events] select');
    expect(await page.inputValue('[data-section=events] select')).toBe('test');
    await page.screenshot({ path: join(DOCS, 'console-customer-health.png'), fullPage: false });
    await page.click('[data-table=health] a[data-code=not_found]');
    await page.waitForFunction(() => location.hash.includes('error_code=not_found'));
    await page.waitForSelector('[data-table=requests] tbody tr[data-status="404"]');
    expect(problems).toEqual([]);
  });
});
