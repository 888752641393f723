// The console's webhooks across customers and the overview's mode in a real headless
// Chromium against the real admin listener: a customer whose receiver answers 503 until its
// event fails and another whose receiver delivers; the overview opens on the mode in trouble
// (test: its quarantine and its failed event), with both modes in a line above, and its failed
// webhooks card leads to the Webhooks page, which shows the failed event with its customer and
// the receiver's answer and redelivers it after a confirmation; the customer page shows the
// receiver with its token masked and its last 24 hours; the overview counts today's refusals by
// error code, test (in trouble) before live. Saves docs/console-webhooks.png,
// console-customer-webhooks.png, console-customers-health.png and console-customer-health.png.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN_TOKEN, createMerchant, issueTestKey, type Merchant } from '../helpers/app.ts';
import { haveChromium, launchChromium, openTab, signIn } from '../helpers/browser.ts';
import { eventKit } from '../helpers/event-kit.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

const DOCS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs');

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

    browser = await launchChromium();
    ({ page } = await openTab(browser, base, { problems, viewport: { width: 1400, height: 900 } }));
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      void d.accept();
    });
    await signIn(page, base);
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
    // The receiver failing, as docs/operators/customers.md shows it.
    await page
      .locator('[data-section=receivers]')
      .screenshot({ path: join(DOCS, 'console-customer-webhooks.png') });
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

  test("the overview counts today's refusals by error code, live and test side by side, the mode in trouble first", async () => {
    // The customer's refusal of the test above (not_found) and the timed-out redeem (422, no
    // error code) are test's; live has a malformed player.
    const live = await issueTestKey(kit.t, failing.customerId, { mode: 'live' });
    const bad = await kit.t.api.inject({
      method: 'POST',
      url: '/v1/redeem',
      headers: {
        authorization: `Bearer ${live.key}`,
        'content-type': 'application/json',
        'idempotency-key': 'o1',
      },
      payload: { player_id: 'x', codes: [uniqueCode()] },
    });
    expect(bad.json().error_code).toBe('bad_player');
    await kit.t.api.requestLog.flush();
    await page.goto(`${base}/console#/customers`);
    await page.goto(`${base}/console#/overview`);
    await page.waitForSelector('[data-table=refusals] tbody tr');
    // Test is in trouble (its quarantine and failed event): its column comes first.
    expect(
      await page.$$eval('[data-table=refusals] thead th', (ths) => ths.map((th) => th.textContent)),
    ).toEqual(['Error code', 'test', 'live']);
    const rows = await page.$$eval('[data-table=refusals] tbody tr', (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '')),
    );
    expect(rows).toEqual([
      ['bad_player', '0', '1'],
      ['not_found', '1', '0'],
      ['no error code (a redeem where no code activated)', '1', '0'],
      ['all', '2', '1'],
    ]);
    const modes = await page.textContent('[data-modes]');
    expect(modes).toMatch(/live: [^—]* · 1 refused today/);
    expect(modes).toMatch(/test: [^—]* · 2 refused today$/);
    await page.click('[data-count="test:not_found"]');
    await page.waitForFunction(
      () => location.hash === '#/requests?day=2026-11-22&mode=test&error_code=not_found',
    );
    await page.waitForSelector('[data-table=requests] tbody tr[data-status="404"]');
    expect(await page.inputValue('select[name=mode]')).toBe('test');
    expect(await page.locator('[data-table=requests] tbody tr').count()).toBe(1);

    // The customers list: each mode's refusals today by error code beside its receiver.
    await page.goto(`${base}/console#/customers`);
    const row = `[data-table=customers] tbody tr:has(a[href="#/customers/${failing.customerId}"])`;
    await page.waitForSelector(row);
    expect(await page.textContent(`${row} [data-health=test] [data-cell=refused]`)).toBe(
      '1 refused today: not_found ×1',
    );
    expect(await page.textContent(`${row} [data-health=live]`)).toBe(
      'no webhook1 refused today: bad_player ×1',
    );
    await page.screenshot({ path: join(DOCS, 'console-customers-health.png'), fullPage: false });
    expect(problems).toEqual([]);
  });

  test('the customer page removes a receiver, after a confirmation; its jobs send no more events', async () => {
    await page.goto(`${base}/console#/customers`);
    await page.goto(`${base}/console#/customers/${failing.customerId}`);
    await page.waitForSelector('[data-table=receivers] [data-remove-webhook=test]');
    // Live has none: nothing to remove there.
    expect(await page.locator('[data-remove-webhook=live]').count()).toBe(0);
    await page.click('[data-remove-webhook=test]');
    await expect
      .poll(() => page.textContent('[data-section=receivers] .status'))
      .toMatch(/^Removed the test webhook https:\/\/127\.0\.0\.1:\d+\/hook\?token=\*\*\*\.$/);
    expect(dialogs.at(-1)).toMatch(
      /^Remove the test webhook https:\/\/127\.0\.0\.1:\d+\/hook\?token=\*\*\*\? The customer's test jobs send no more events; pending ones are dropped\.$/,
    );
    await page.waitForSelector('[data-table=receivers] tbody tr:has-text("none registered") >> nth=1');
    const events = async () =>
      (
        await kit.t.admin.inject({
          method: 'GET',
          url: `/admin/v1/customers/${failing.customerId}/events?mode=test`,
          headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
        })
      ).json().events.length as number;
    const before = await events();
    await kit.finishedJob(failing);
    expect(await events()).toBe(before);
    expect(problems).toEqual([]);
  });
});
