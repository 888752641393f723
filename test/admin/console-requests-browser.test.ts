// The console's request log and search box, in a real headless Chromium: the Requests
// page lists refusals across customers with their filters, the customer page has the same list
// for that customer, the jobs list shows and filters by player, the job page shows the request
// that created it, and the header's search box goes where a request, job, event or player id
// leads. Saves docs/console-requests.png.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { bearer, createMerchant, createTestApp, type Merchant, type TestApp } from '../helpers/app.ts';
import { haveChromium, launchChromium, openTab, signIn } from '../helpers/browser.ts';
import { redeem, uniqueCode } from '../helpers/redeem.ts';

const DOCS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs');

describe.skipIf(!haveChromium)('the console: request log and lookup by id', () => {
  let t: TestApp;
  let base: string;
  let browser: Browser;
  let page: Page;
  let m: Merchant;
  let other: Merchant;
  let jobId: string;
  let jobRequestId: string;
  let refusedId: string;
  let badPlayerJob: string;
  const player = `6${Date.now().toString().slice(-9)}`;
  const problems: string[] = [];

  beforeAll(async () => {
    t = await createTestApp();
    await t.admin.listen({ host: '127.0.0.1', port: 0 });
    const addr = t.admin.server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    m = await createMerchant(t, { plan: { daily_limit: 1, per_request_usd: '0.5' } });
    other = await createMerchant(t);
    // A job for the player, and refusals of several kinds from both customers and from nobody.
    const ok = await redeem(t, m.key, { player_id: player, codes: [uniqueCode()] });
    expect(ok.statusCode).toBe(200);
    jobRequestId = ok.headers['x-request-id'] as string;
    jobId = (
      await t.ctx.db.query<{ id: string }>('select id from jobs where request_id = $1', [jobRequestId])
    ).rows[0]!.id;
    const poor = await redeem(t, m.key, { player_id: player, codes: [uniqueCode(), uniqueCode()] });
    expect(poor.statusCode).toBe(402);
    refusedId = poor.headers['x-request-id'] as string;
    expect((await redeem(t, m.key, '{"player_id": ')).statusCode).toBe(400);
    const missing = await t.api.inject({
      method: 'GET',
      url: '/v1/jobs/job_nothere',
      headers: bearer(other.key),
    });
    expect(missing.statusCode).toBe(404);
    expect((await t.api.inject({ method: 'GET', url: '/v1/me' })).statusCode).toBe(401);
    // A redeem whose one code met a bad player: 422, its outcomes and its job in the log.
    const badPlayer = await redeem(t, other.key, { player_id: '00077777', codes: [uniqueCode()] });
    expect(badPlayer.statusCode).toBe(422);
    badPlayerJob = (
      await t.ctx.db.query<{ id: string }>('select id from jobs where request_id = $1', [
        badPlayer.headers['x-request-id'],
      ])
    ).rows[0]!.id;
    await t.api.requestLog.flush();

    browser = await launchChromium();
    // The lookups of unknown ids answer 404 on purpose; the browser reports those as errors.
    ({ page } = await openTab(browser, base, {
      problems,
      viewport: { width: 1400, height: 900 },
      expectedErrors: /status of 4\d\d/,
    }));
    await signIn(page, base);
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const rows = (table: string) =>
    page.$$eval(`[data-table=${table}] tbody tr`, (trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].map((td) => td.textContent?.trim() ?? '')),
    );

  test('the Requests page lists refusals across customers, filtered by status and customer', async () => {
    await page.click('nav a[data-nav=requests]');
    await page.waitForSelector('[data-table=requests] tbody tr[data-status]');
    const all = await rows('requests');
    expect(all.length).toBeGreaterThanOrEqual(4);
    const text = all.map((r) => r.join(' | ')).join('\n');
    expect(text).toContain('POST /v1/redeem');
    expect(text).toContain('insufficient_funds');
    expect(text).toContain('GET /v1/jobs/job_nothere');
    expect(text).toContain('unidentified');
    expect(text).toContain(m.keyPrefix);
    expect(text).not.toContain(m.key);
    // Why: a redeem's outcomes, and the job it made; the counts by error code above the list.
    const redeemRow = all.find((r) => r.join(' ').includes('bad_player ×1'));
    expect(redeemRow?.join(' | ')).toContain(badPlayerJob);
    expect(redeemRow?.join(' | ')).toContain('00077777');
    expect(text).toContain('body is not valid JSON');
    const counts = await page.textContent('[data-counts]');
    expect(counts).toMatch(/^\d+ refused or failed: /);
    for (const code of [
      'insufficient_funds ×1',
      'bad_request ×1',
      'not_found ×1',
      'unauthorized ×1',
      'no error code ×1',
    ])
      expect(counts).toContain(code);
    await page.screenshot({ path: join(DOCS, 'console-requests.png'), fullPage: true });
    // A count filters the list by its code; a job link opens the job.
    await page.click('[data-counts] a[data-code=not_found]');
    await page.waitForFunction(() => location.hash.includes('error_code=not_found'));
    await page.waitForSelector('[data-table=requests] tbody tr[data-status="404"]');
    expect((await rows('requests')).every((r) => r.join(' ').includes('not_found'))).toBe(true);
    await page.goto(`${base}/console#/requests?player_id=00077777&day=today`);
    await page.waitForSelector(`[data-table=requests] a[href="#/jobs/${badPlayerJob}"]`);
    expect(await rows('requests')).toHaveLength(1);
    await page.click(`[data-table=requests] a[href="#/jobs/${badPlayerJob}"]`);
    await page.waitForFunction((id) => location.hash === `#/jobs/${id}`, badPlayerJob);
    await page.goto(`${base}/console#/requests`);
    await page.waitForSelector('[data-table=requests] tbody tr[data-status]');

    await page.fill('input[name=status]', '402');
    await page.click('form.filters button[type=submit]');
    await page.waitForFunction(() => location.hash.includes('status=402'));
    await page.waitForSelector('[data-table=requests] tbody tr[data-status="402"]');
    const only = await rows('requests');
    expect(only).toHaveLength(1);
    expect(only[0]!.join(' ')).toContain(refusedId);

    await page.goto(`${base}/console#/requests?customer_id=${other.customerId}`);
    await page.waitForSelector('[data-table=requests] tbody tr[data-status="404"]');
    expect(await rows('requests')).toHaveLength(2);
  });

  test("the customer page shows that customer's refusals", async () => {
    await page.goto(`${base}/console#/customers/${m.customerId}`);
    await page.waitForSelector('[data-section=requests] [data-table=requests] tbody tr[data-status]');
    const mine = await page.$$eval('[data-section=requests] tbody tr', (trs) =>
      trs.map((tr) => tr.textContent ?? ''),
    );
    expect(mine).toHaveLength(2);
    expect(mine.join('\n')).toContain(refusedId);
    expect(mine.join('\n')).not.toContain('job_nothere');
  });

  test('the search box: a refused request id, a job id, the request that made a job, a player id, nonsense', async () => {
    const search = async (q: string) => {
      await page.fill('nav form.search input[name=q]', q);
      await page.click('nav form.search button[type=submit]');
    };
    await search(refusedId);
    await page.waitForFunction((id) => location.hash === `#/requests?request_id=${id}`, refusedId);
    await page.waitForSelector(`[data-table=requests] [data-request-id="${refusedId}"]`);
    expect(await rows('requests')).toHaveLength(1);

    await search(jobRequestId);
    await page.waitForFunction((id) => location.hash === `#/jobs/${id}`, jobId);
    await page.waitForSelector(`dd [data-request-id="${jobRequestId}"]`);

    await page.goto(`${base}/console#/overview`);
    await search(jobId);
    await page.waitForFunction((id) => location.hash === `#/jobs/${id}`, jobId);

    await search(player);
    await page.waitForFunction((p) => location.hash === `#/jobs?player_id=${p}`, player);
    await page.waitForSelector('[data-table=jobs] tbody tr td a[href^="#/jobs/job_"]');
    const jobs = await rows('jobs');
    expect(jobs).toHaveLength(1);
    expect(jobs[0]).toContain(player);
    expect(await page.inputValue('input[name=player_id]')).toBe(player);

    await search('hello');
    await page.waitForSelector('nav .search-note:has-text("is not a request, job, event or player id")');
    await search('job_doesNotExist0000000000');
    await page.waitForSelector('nav .search-note:has-text("no job job_doesNotExist0000000000")');
    expect(problems).toEqual([]);
  });
});
