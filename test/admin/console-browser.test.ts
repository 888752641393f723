// The operator console in a real headless Chromium (Debian's, driven by playwright-core) against
// the real admin listener: sign-in and a wrong token, plots drawn from real redeems, issuing and
// revoking a key, a wallet top-up, settling a quarantined code, sign-out. No CSP violation and
// no script error is allowed on any page. Saves the overview as docs/console-overview.png.
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import {
  ADMIN_TOKEN,
  adminCall,
  bearer,
  createMerchant,
  createTestApp,
  type Merchant,
  type TestApp,
} from '../helpers/app.ts';
import { haveChromium, launchChromium, openTab } from '../helpers/browser.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

const DOCS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs');
const SCREENSHOT = join(DOCS, 'console-overview.png');
const shot = (name: string) => join(DOCS, name);

describe.skipIf(!haveChromium)('the console in Chromium', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let context: BrowserContext;
  let page: Page;
  let m: Merchant;
  let timeoutJob: string;
  const problems: string[] = [];

  beforeAll(async () => {
    t = await createTestApp();
    await t.admin.listen({ host: '127.0.0.1', port: 0 });
    const addr = t.admin.server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;

    // Real traffic through the public API: every outcome, and one quarantined code.
    m = await createMerchant(t, { topup: { test: 5 } });
    await adminCall(t, 'PUT', `/admin/v1/customers/${m.customerId}/plan`, {
      label: 'gold',
      daily_limit: 100,
      per_request_usd: '0.01',
      overage: true,
      active: true,
    });
    const sent = await redeem(t, m.key, {
      player_id: '5123456789',
      codes: [
        uniqueCode(),
        uniqueCode(),
        uniqueCode(),
        uniqueCode('USED'),
        uniqueCode('INVALID'),
        uniqueCode('FAIL'),
      ],
    });
    expect(sent.statusCode, sent.body).toBe(200);
    t.clock.advance(3_600_000);
    expect((await redeem(t, m.key, { player_id: '0009876543', codes: [uniqueCode()] })).statusCode).toBe(422);
    const timeout = await redeem(t, m.key, { player_id: '5123456789', codes: [uniqueCode('TIMEOUT')] });
    expect(timeout.json().codes[0].disposition).toBe('quarantined');
    timeoutJob = (
      await adminCall<{ codes: { job_id: string }[] }>(
        t,
        'GET',
        `/admin/v1/quarantine?customer_id=${m.customerId}`,
      )
    ).codes[0]!.job_id;

    browser = await launchChromium();
    // Every CSP violation, script error and request to anywhere but the listener fails the test.
    ({ context, page } = await openTab(browser, base, { problems }));
    // Money, revoke and settle ask first (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments): the operator says yes.
    page.on('dialog', (d) => d.accept());
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const api = <T = Record<string, unknown>>(url: string) => adminCall<T>(t, 'GET', url);

  test('a wrong token is refused and leaves no cookie', async () => {
    await page.goto(`${base}/console`);
    await page.fill('#token', 'not-the-admin-token');
    await page.click('button[type=submit]');
    await expect.poll(() => page.textContent('form.signin .status')).toBe('Wrong token.');
    expect(await context.cookies()).toEqual([]);
    // The API itself refuses the page's requests too.
    const status = await page.evaluate(() => fetch('/admin/v1/overview').then((r) => r.status));
    expect(status).toBe(401);
    // Those two refusals are the only errors the browser reports, and all that is expected.
    expect(problems).toEqual(
      Array(2).fill('Failed to load resource: the server responded with a status of 401 (Unauthorized)'),
    );
    problems.length = 0;
  });

  test('signing in keeps only an HttpOnly, SameSite=Strict session cookie', async () => {
    await page.fill('#token', ADMIN_TOKEN);
    await page.click('button[type=submit]');
    await page.waitForSelector('nav a[data-nav=overview].active');
    const cookies = await context.cookies();
    expect(
      cookies.map((c) => ({ name: c.name, httpOnly: c.httpOnly, sameSite: c.sameSite, path: c.path })),
    ).toEqual([{ name: 'rg_console', httpOnly: true, sameSite: 'Strict', path: '/' }]);
    expect(cookies[0]!.value).not.toContain(ADMIN_TOKEN);
    const stored = await page.evaluate(() => ({
      local: localStorage.length,
      session: sessionStorage.length,
      cookie: document.cookie,
    }));
    expect(stored).toEqual({ local: 0, session: 0, cookie: '' });
  });

  test('the overview plots real redeems: every series, every bucket, the same totals as the API', async () => {
    // The redeems here are made with a test key; the overview shows them under test.
    await page.waitForSelector('[data-plot=billing] canvas');
    await page.selectOption('[data-select=mode]', 'test');
    await expect.poll(() => page.evaluate(() => location.hash)).toBe('#/overview?mode=test');
    await page.waitForSelector('[data-plot=billing] canvas');
    const [hourly, daily, overview] = await Promise.all([
      api<{ totals: Record<string, number>; buckets: unknown[] }>(
        '/admin/v1/usage?granularity=hour&mode=test',
      ),
      api<{ totals: Record<string, number>; buckets: unknown[] }>(
        '/admin/v1/usage?granularity=day&mode=test',
      ),
      api<{ quarantined_codes: number }>('/admin/v1/overview?mode=test'),
    ]);
    expect(hourly.totals).toEqual({
      activated: 3,
      code_used: 1,
      invalid_code: 1,
      bad_player: 1,
      failed: 2,
      billed: 5,
      refunded: 3,
    });
    const drawn = await page.evaluate(() =>
      [
        ...document.querySelectorAll<
          HTMLElement & { plot: { data: number[][] }; raw: Record<string, number[]> }
        >('[data-plot]:not([data-plot=money])'),
      ].map((el) => ({
        name: el.dataset.plot,
        canvas: el.querySelector('canvas') !== null,
        points: el.plot.data[0]!.length,
        // Stacked bars are drawn at running sums; `raw` holds each series' own counts.
        series: Object.entries(el.raw).map(([label, values]) => [label, values.reduce((a, b) => a + b, 0)]),
        shown: [...el.querySelectorAll('[data-total]')].map((td) => [
          (td as HTMLElement).dataset.total,
          Number(td.textContent),
        ]),
      })),
    );
    const outcomes = ['activated', 'code_used', 'invalid_code', 'bad_player', 'failed'];
    const pick = (totals: Record<string, number>, keys: string[]) => keys.map((k) => [k, totals[k]]);
    expect(drawn).toEqual([
      {
        name: 'hourly',
        canvas: true,
        points: 24,
        series: pick(hourly.totals, outcomes),
        shown: pick(hourly.totals, outcomes),
      },
      {
        name: 'daily',
        canvas: true,
        points: 30,
        series: pick(daily.totals, outcomes),
        shown: pick(daily.totals, outcomes),
      },
      {
        name: 'billing',
        canvas: true,
        points: 30,
        series: pick(daily.totals, ['billed', 'refunded']),
        shown: pick(daily.totals, ['billed', 'refunded']),
      },
    ]);
    expect(hourly.buckets).toHaveLength(24);
    // The legend shows the latest bucket's counts (not "--") and the axes say what they count.
    const legend = await page.$$eval('[data-plot=hourly] .u-legend .u-series', (rows) =>
      rows.map((r) => r.textContent),
    );
    expect(legend.every((l) => !l!.includes('--'))).toBe(true);
    const yLabels = await page.$$eval('[data-plot]:not([data-plot=money])', (els) =>
      els.map((el) => (el as HTMLElement & { plot: { axes: { label?: string }[] } }).plot.axes[1]!.label),
    );
    expect(yLabels).toEqual(['codes per hour', 'codes per day', 'requests per day']);
    expect(await page.textContent('[data-card=quarantine] .big')).toBe(String(overview.quarantined_codes));
    mkdirSync(dirname(SCREENSHOT), { recursive: true });
    await page.screenshot({ path: SCREENSHOT, fullPage: true });
  });

  test('customers: search, then issue a key (secret shown once) and revoke it', async () => {
    await page.click('nav a[data-nav=customers]');
    await page.fill('input[name=q]', String(m.customerId));
    await page.click('form.inline:has(input[name=q]) button');
    await page.click(`[data-table=customers] a[href="#/customers/${m.customerId}"] >> nth=0`);
    await page.waitForSelector('[data-form=issue-key]');
    // The customer's own usage plot, from the same redeems.
    await page.waitForSelector('[data-plot=customer-daily] canvas');
    expect(await page.textContent('[data-plot=customer-daily] [data-total=activated]')).toBe('3');

    await page.fill('[data-form=issue-key] input[name=label]', 'from the console');
    await page.click('[data-form=issue-key] button[type=submit]');
    const key = (await page.textContent('[data-secret=key]'))!;
    expect(key).toMatch(/^rk_test_[A-Za-z0-9]{32}$/);
    const me = () => t.api.inject({ method: 'GET', url: '/v1/me', headers: bearer(key) });
    expect((await me()).statusCode).toBe(200);

    const detail = await api<{ keys: { key_id: string; key_prefix: string; label: string }[] }>(
      `/admin/v1/customers/${m.customerId}`,
    );
    const issued = detail.keys.find((k) => k.label === 'from the console')!;
    expect(issued.key_prefix).toBe(key.slice(0, 12));
    await page.click(`[data-revoke="${issued.key_id}"]`);
    await expect
      .poll(() => page.textContent('[data-form=issue-key] ~ .status'))
      .toBe(`Revoked ${issued.key_prefix}….`);
    expect((await me()).json()).toMatchObject({ ok: false, error_code: 'revoked' });

    // Read again, the page shows the prefix only: the secret is gone for good.
    await page.reload();
    await page.waitForSelector('[data-table=keys]');
    expect(await page.content()).not.toContain(key);
  });

  test('a wallet top-up shows in the balance and the ledger', async () => {
    await page.selectOption('[data-form=topup] select[name=mode]', 'live');
    await page.fill('[data-form=topup] input[name=usd]', '12.5');
    await page.fill('[data-form=topup] input[name=note]', 'console top-up');
    await page.click('[data-form=topup] button[type=submit]');
    await expect
      .poll(() => page.textContent('[data-flash]'))
      .toBe('Topped up $12.5: the live balance is $12.5.');
    expect(await page.textContent('[data-balance=live]')).toBe('$12.5');
    await expect
      .poll(() => page.textContent('[data-table=ledger] tbody tr:first-child'))
      .toContain('console top-up');
    const ledger = await api<{ entries: { amount_usd: number; note: string }[] }>(
      `/admin/v1/customers/${m.customerId}/ledger?mode=live`,
    );
    expect(ledger.entries).toEqual([expect.objectContaining({ amount_usd: 12.5, note: 'console top-up' })]);
  });

  test('a stock import from a file counts added, duplicate and rejected codes and never shows them', async () => {
    const [a, b] = [uniqueCode('STOCK'), uniqueCode('STOCK')];
    await page.selectOption('[data-form=import] select[name=mode]', 'test');
    await page.selectOption('[data-form=import] select[name=category]', '660');
    await page.setInputFiles('[data-form=import] input[type=file]', {
      name: 'codes.txt',
      mimeType: 'text/plain',
      buffer: Buffer.from(`${a}\n\n${b}\r\n${a}\nbad code!\n`),
    });
    await page.click('[data-form=import] button[type=submit]');
    await expect
      .poll(() => page.textContent('[data-flash]'))
      .toBe('Imported into test 660 UC: 2 added, 1 duplicates, 1 rejected.');
    const counts = await page.$$eval('[data-table=stock-test] tbody tr', (rows) =>
      rows.map((r) => [...r.querySelectorAll('td')].map((td) => td.textContent)),
    );
    expect(counts).toContainEqual(['660 UC', '2', '0', '0']);
    expect(counts).toContainEqual(['60 UC', '0', '0', '0']);
    const html = await page.content();
    expect(html).not.toContain(a);
    expect(html).not.toContain(b);
  });

  test('jobs: the filtered list and a job with its codes by last 4 characters', async () => {
    await page.goto(`${base}/console#/jobs?customer_id=${m.customerId}`);
    await page.waitForSelector('[data-table=jobs] tbody tr a');
    expect(await page.locator('[data-table=jobs] tbody tr').count()).toBe(3);
    // Newest first; zero counts are shown as 0 (the bad player's job billed nothing).
    const cells = await page.$$eval('[data-table=jobs] tbody tr', (rows) =>
      rows.map((r) => [...r.querySelectorAll('td')].slice(4, 10).map((td) => td.textContent)),
    );
    // Status (with a badge of its own where nothing activated or a code is quarantined), codes,
    // then activated, billed failures, refunded and quarantined.
    // (The two newest share their creation time: their order is the id's.)
    expect([...cells.slice(0, 2)].sort()).toEqual([
      ['nothing activated', '1/1', '0', '0', '1', '0'],
      ['quarantined code', '1/1', '0', '0', '0', '1'],
    ]);
    expect(cells[2]).toEqual(['completed', '6/6', '3', '2', '1', '0']);
    expect(await page.textContent('[data-table=jobs] tbody tr td:nth-child(2)')).toContain(
      `#${m.customerId}`,
    );
    await page.screenshot({ path: shot('console-jobs.png'), fullPage: true });
    await page.click(`[data-table=jobs] a[href="#/jobs/${timeoutJob}"]`);
    await page.waitForSelector('[data-table=codes]');
    const row = (await page.textContent('[data-table=codes] tbody tr'))!;
    expect(row).toContain('quarantined');
    expect(row).toMatch(/…[A-Z0-9]{4}/);
    expect(await page.textContent('[data-attention]')).toBe('quarantined code');
    expect(await page.textContent('dl')).toContain(
      '0 activated · 0 billed failures · 0 refunded · 1 quarantined',
    );
    await page.screenshot({ path: shot('console-job.png'), fullPage: true });
  });

  test('quarantine: settle the timed-out code as used', async () => {
    await page.click('nav a[data-nav=quarantine]');
    await page.waitForSelector(`[data-table=quarantine] a[href="#/jobs/${timeoutJob}"]`);
    await page.click(`[data-table=quarantine] tr:has(a[href="#/jobs/${timeoutJob}"]) [data-settle=used]`);
    await expect
      .poll(() => page.textContent('main .status'))
      .toMatch(new RegExp(`^Settled …\\w{4} of ${timeoutJob} as used\\.$`));
    const job = await api<{ attempts: { settlement: string | null }[] }>(`/admin/v1/jobs/${timeoutJob}`);
    expect(job.attempts.map((a) => a.settlement)).toEqual(['used']);
    expect((await api<{ codes: unknown[] }>('/admin/v1/quarantine')).codes).toEqual([]);
    // The settled code stays on the page for a week, with how it settled, by whom and when.
    const settled = `[data-table=settled] tr:has(a[href="#/jobs/${timeoutJob}"])`;
    await page.waitForSelector(settled);
    expect(await page.textContent(`${settled} [data-settlement]`)).toBe('used · billed as code_used');
    expect(await page.textContent(`${settled} [data-cell=settled-by]`)).toBe('root by hand');
    expect(await page.textContent('main h3')).toBe('Settled in the last 7 days');
    await page.screenshot({ path: shot('console-quarantine.png'), fullPage: true });
  });

  test('signing out ends the session', async () => {
    const [cookie] = await context.cookies();
    await page.click('nav button.link');
    await page.waitForSelector('form.signin');
    expect(await context.cookies()).toEqual([]);
    const res = await t.admin.inject({
      method: 'GET',
      url: '/admin/v1/overview',
      headers: { cookie: `${cookie!.name}=${cookie!.value}` },
    });
    expect(res.statusCode).toBe(401);
    expect(problems).toEqual([]);
  });
});
