// A customer's webhook event log and statement in the console, in a real headless Chromium
// against the real admin listener, with a real HTTPS receiver: an event delivered, then a
// redelivery from the button (a confirmation first) that arrives with the same delivery id and
// shows as a redelivery attempt; the statement's plot, table and CSV download. No CSP violation
// and no script error is allowed. Saves docs/console-events.png and docs/console-statement.png.
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Papa from 'papaparse';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { adminCall, createMerchant, type Merchant } from '../helpers/app.ts';
import { haveChromium, launchChromium, openTab, signIn } from '../helpers/browser.ts';
import { eventKit } from '../helpers/event-kit.ts';
import type { Receiver } from '../helpers/https-receiver.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

const DOCS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs');

describe.skipIf(!haveChromium)("a customer's event log and statement in Chromium", () => {
  const kit = eventKit();
  let base: string;
  let browser: Browser;
  let page: Page;
  let m: Merchant;
  let receiver: Receiver;
  let eventId: string;
  const problems: string[] = [];

  beforeAll(async () => {
    const t = kit.t;
    await t.admin.listen({ host: '127.0.0.1', port: 0 });
    const addr = t.admin.server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    m = await createMerchant(t, { plan: { daily_limit: 2, per_request_usd: '0.05' }, topup: { test: 3 } });
    receiver = await kit.newReceiver();
    receiver.secret = await kit.register(m.key, receiver.url);
    eventId = (await kit.eventOfJob(m, await kit.finishedJob(m))).id;
    await kit.deliver();
    // A second day of traffic for the statement: overage from the wallet and a refund.
    kit.clock.advance(86_400_000);
    const sent = await redeem(t, m.key, {
      player_id: '5123456789',
      codes: [uniqueCode(), uniqueCode(), uniqueCode('USED'), uniqueCode('FAIL')],
    });
    expect(sent.statusCode, sent.body).toBe(200);
    await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/wallet/topup`, {
      mode: 'test',
      usd: '2',
    });

    browser = await launchChromium();
    ({ page } = await openTab(browser, base, { problems }));
    page.on('dialog', (d) => d.accept());
    await signIn(page, base);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
  });

  test('the event log shows the delivery; Redeliver sends it again and shows the attempt', async () => {
    await page.goto(`${base}/console#/customers/${m.customerId}`);
    const row = `[data-table=events] tr[data-event="${eventId}"]`;
    await page.waitForSelector(row);
    expect(await page.textContent(`${row} [data-state]`)).toBe('delivered');
    expect(await page.locator(`${row} [data-attempt]`).count()).toBe(1);

    await page.click(`${row} [data-redeliver]`);
    await expect
      .poll(() => page.textContent('[data-section=events] .status'))
      .toBe(`Redelivery of ${eventId} queued: its attempt appears below once sent.`);
    await kit.deliver();
    expect(receiver.requests).toHaveLength(2);
    expect(receiver.requests[1]!.headers['svc-delivery-id']).toBe(eventId);
    expect(receiver.requests[1]!.verdict).toBeNull();
    await page.click('[data-section=events] h3 button');
    await expect.poll(() => page.locator(`${row} [data-attempt=redelivery]`).count()).toBe(1);
    expect(await page.textContent(`${row} [data-attempt=redelivery]`)).toMatch(
      / · 200 · \d+ ms · redelivery$/,
    );
    await page.locator('[data-section=events]').screenshot({ path: join(DOCS, 'console-events.png') });
  });

  test('the statement: a plot, the days with totals, and a CSV download of the same numbers', async () => {
    const api = await adminCall<{
      days: { date: string; closing_balance_usd: number }[];
      totals: Record<string, unknown>;
    }>(kit.t, 'GET', `/admin/v1/customers/${m.customerId}/statements?mode=test`);
    await page.waitForSelector('[data-plot=statement] canvas');
    const totalRow = await page.$$eval('[data-table=statement] tbody tr:last-child td', (tds) =>
      tds.map((td) => td.textContent),
    );
    expect(totalRow).toEqual([
      'total',
      String(api.totals.requests_included),
      String(api.totals.requests_overage),
      String(api.totals.requests_refunded),
      '3',
      '1',
      '0',
      '0',
      '1',
      '$0.05',
      '$5',
      '$0',
      '$0',
      '$4.95',
    ]);
    expect(await page.locator('[data-table=statement] tbody tr').count()).toBe(31);
    const [download] = await Promise.all([
      page.waitForEvent('download'),
      page.click('[data-download=statement]'),
    ]);
    expect(download.suggestedFilename()).toMatch(/^statement-test-\d{4}-\d\d-\d\d-\d{4}-\d\d-\d\d\.csv$/);
    const csv = readFileSync((await download.path())!, 'utf8');
    const rows = Papa.parse<Record<string, string>>(csv, { header: true, skipEmptyLines: true }).data;
    expect(rows.map((r) => [r.date, Number(r.closing_balance_usd)])).toEqual(
      api.days.map((d) => [d.date, d.closing_balance_usd]),
    );
    await page.locator('[data-section=statement]').screenshot({ path: join(DOCS, 'console-statement.png') });
    expect(problems).toEqual([]);
  });

  test('a page still loading when the operator moves on never draws over the page that replaced it', async () => {
    // The overview's usage answers arrive late (as under load): by then the customer page shows.
    let release!: () => void;
    const late = new Promise<void>((done) => {
      release = done;
    });
    let holding!: () => void;
    const held = new Promise<void>((done) => {
      holding = done;
    });
    await page.route('**/admin/v1/usage?granularity=hour*', async (route) => {
      holding();
      await late;
      await route.continue();
    });
    try {
      await page.goto(`${base}/console#/overview`);
      // Move on only once the overview is loading: under load a second hash change can land
      // before the first one's handler runs, and the overview would then never start.
      await held;
      await page.goto(`${base}/console#/customers/${m.customerId}`);
      await page.waitForSelector(`[data-table=events] tr[data-event="${eventId}"]`);
      const answered = page.waitForResponse('**/admin/v1/usage?granularity=hour*');
      release();
      await answered;
      // The overview's render ran into its own detached view: the customer page is still there.
      await page.waitForTimeout(300);
      expect(await page.locator(`[data-table=events] tr[data-event="${eventId}"]`).count()).toBe(1);
      expect(await page.locator('[data-plot=hourly]').count()).toBe(0);
    } finally {
      await page.unroute('**/admin/v1/usage?granularity=hour*');
    }
    expect(problems).toEqual([]);
  });
});
