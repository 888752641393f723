// The chat bot in the console (docs/reference/bot.md#links-and-roles, docs/reference/bot.md#top-ups), in a real headless Chromium against the real
// admin listener of an app whose bot talks to the Bot API stand-in, with people in the chat: the
// customer's bound people and an unbind (asked first; cancel sends nothing), a link made after a
// confirmation and shown once, which binds the person who opens it; the Top-ups page with a live
// `/topup` request approved (credited once, gone from pending, the person told) and another
// rejected with a reason; a payment that credited nothing listed as unmatched with its charge id;
// a viewer sees all of it and no button; with no bot the link control is off with a note. No CSP
// violation and no script error is allowed. Saves docs/console-bot.png.
import { mkdirSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { ADMIN_TOKEN, adminCall, createMerchant, type Merchant } from '../helpers/app.ts';
import { type BotTestApp, botMessages, createBotTestApp, linkPerson, person, say } from '../helpers/bot.ts';
import { haveChromium, launchChromium, openTab, signIn } from '../helpers/browser.ts';
import { addOperator } from '../helpers/operators.ts';

const DOCS = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'docs');

describe.skipIf(!haveChromium)('the chat bot in the console', () => {
  let t: BotTestApp;
  let base: string;
  let browser: Browser;
  let page: Page;
  let m: Merchant;
  let customerName: string;
  let viewerToken: string;
  const dialogs: string[] = [];
  let answer: 'accept' | 'dismiss' = 'accept';
  /** What a prompt (the reject reason) is answered with. */
  let promptText = '';
  const problems: string[] = [];

  beforeAll(async () => {
    t = await createBotTestApp();
    await t.admin.listen({ host: '127.0.0.1', port: 0 });
    const addr = t.admin.server.address();
    base = `http://127.0.0.1:${typeof addr === 'object' && addr ? addr.port : 0}`;
    m = await createMerchant(t);
    customerName = (
      await adminCall<{ customer: { name: string } }>(t, 'GET', `/admin/v1/customers/${m.customerId}`)
    ).customer.name;
    viewerToken = (await addOperator(t.admin, 'vic', 'viewer')).token;
    browser = await launchChromium();
    ({ page } = await openTab(browser, base, { problems }));
    page.on('dialog', (d) => {
      dialogs.push(d.message());
      if (answer === 'dismiss') void d.dismiss();
      else void (d.type() === 'prompt' ? d.accept(promptText) : d.accept());
    });
  }, 60_000);

  afterAll(async () => {
    await browser?.close();
    await t?.close();
  });

  const signInAs = (token: string) => signIn(page, base, token);

  async function openCustomer() {
    await page.goto(`${base}/console#/customers/${m.customerId}`);
    // A hash change on the same document does not reload it: force a fresh render.
    await page.reload();
    await page.waitForSelector('[data-section=bot] [data-form=bot-link]', { state: 'attached' });
    await page.waitForSelector('[data-section=bot] [data-table=bot-users], [data-note=no-bot-users]');
  }

  const boundRows = async () =>
    (
      await t.ctx.db.query<{ id: string; unbound: boolean }>(
        'select id, unbound_at is not null as unbound from bot_users where customer_id = $1 order by bound_at, id',
        [m.customerId],
      )
    ).rows;

  test('the Chat bot section lists the bound people; Unbind asks first, then unbinds', async () => {
    const owner = await linkPerson(t, m.customerId, 'owner', person('owner'));
    const clerk = await linkPerson(t, m.customerId, 'staff', person('clerk'));
    await signInAs(ADMIN_TOKEN);
    await openCustomer();
    const rows = page.locator('[data-table=bot-users] tbody tr');
    expect(await rows.count()).toBe(2);
    const cells = await rows.evaluateAll((trs) =>
      trs.map((tr) => [...tr.querySelectorAll('td')].slice(0, 3).map((td) => td.textContent)),
    );
    expect(cells).toEqual([
      [`@${owner.username}`, String(owner.id), 'owner'],
      [`@${clerk.username}`, String(clerk.id), 'staff'],
    ]);
    const [, clerkRow] = await boundRows();

    answer = 'dismiss';
    await page.click(`[data-unbind="${clerkRow!.id}"]`);
    expect(dialogs.at(-1)).toBe(
      `Unbind @${clerk.username} (staff) from this customer? The bot treats them as unlinked from then on.`,
    );
    expect((await boundRows()).map((r) => r.unbound)).toEqual([false, false]);

    answer = 'accept';
    await page.click(`[data-unbind="${clerkRow!.id}"]`);
    await expect
      .poll(() => page.textContent('[data-section=bot] .status'))
      .toBe(`Unbound @${clerk.username}: the bot treats them as unlinked from now on.`);
    expect(await rows.count()).toBe(1);
    expect((await boundRows()).map((r) => r.unbound)).toEqual([false, true]);
    expect((await say(t, clerk, '/account')).text).toMatch(/not linked/);
  });

  test('Link a person asks first and shows the link once; it binds the person who opens it', async () => {
    const before = (await t.ctx.db.query('select 1 from bot_links')).rows.length;
    await page.selectOption('[data-form=bot-link] select[name=role]', 'staff');
    answer = 'dismiss';
    await page.click('[data-form=bot-link] button[type=submit]');
    expect(dialogs.at(-1)).toBe(
      `Make a link that binds one Telegram user to customer ${m.customerId} as staff? It is shown once, works once and expires in 24 h.`,
    );
    expect((await t.ctx.db.query('select 1 from bot_links')).rows.length).toBe(before);

    answer = 'accept';
    await page.click('[data-form=bot-link] button[type=submit]');
    const url = await page.textContent('[data-secret=bot-url]');
    const token = /^https:\/\/t\.me\/redeem_sim_bot\?start=([A-Za-z0-9]{32,})$/.exec(url ?? '')?.[1];
    expect(token, url ?? '').toBeDefined();
    // The note gives the link's own expiry, 24 h after it was made (the test clock's time).
    const made = await t.ctx.db.query<{ created: Date; expires: Date }>(
      'select created_at as created, expires_at as expires from bot_links order by created_at desc, id limit 1',
    );
    const { created, expires } = made.rows[0]!;
    expect(new Date(expires).getTime() - new Date(created).getTime()).toBe(86_400_000);
    const shown = new Date(expires)
      .toISOString()
      .replace(/\.\d+Z$/, ' UTC')
      .replace('T', ' ');
    expect(await page.textContent('[data-note=bot-link]')).toBe(
      `Single use: the first Telegram user to open it is bound. It expires in 24 h (${shown}).`,
    );
    mkdirSync(DOCS, { recursive: true });
    await page.locator('[data-section=bot]').screenshot({ path: join(DOCS, 'console-bot.png') });

    const newcomer = person('newcomer');
    expect((await say(t, newcomer, `/start ${token}`)).text).toMatch(/^Linked to /);
    // Shown once: the page read again has the person, and no link anywhere.
    await openCustomer();
    expect(await page.locator('[data-secret=bot-url]').count()).toBe(0);
    expect(await page.content()).not.toContain(token!);
    expect(await page.locator('[data-table=bot-users]').textContent()).toContain(`@${newcomer.username}`);
  });

  test('Top-ups: a live /topup is pending, approved once from the console, and gone from pending', async () => {
    const owner = await linkPerson(t, m.customerId, 'owner', person('payer'));
    const asked = await say(t, owner, '/topup 25');
    const first = /Top-up request (tpr_[A-Za-z0-9]+) made/.exec(asked.text ?? '')?.[1];
    expect(first, asked.text).toBeDefined();
    const second = /Top-up request (tpr_[A-Za-z0-9]+) made/.exec(
      (await say(t, owner, '/topup 10.5')).text ?? '',
    )?.[1];
    expect(second).toBeDefined();

    await page.click('nav a[data-nav=topups]');
    await page.waitForSelector(`[data-approve="${first}"]`);
    expect(await page.textContent('nav a[data-nav=topups]')).toBe('Top-ups');
    const row = page.locator('[data-table=topups] tbody tr', {
      has: page.locator(`[data-approve="${first}"]`),
    });
    const cells = await row.locator('td').allTextContents();
    expect(cells.slice(0, 8)).toEqual([
      first,
      `${customerName} #${m.customerId}`,
      'live',
      '$25',
      'pending',
      `@${owner.username} (${owner.id})`,
      expect.stringMatching(/^2026-11-22 09:00:\d\d(\.\d+)? UTC$/),
      '—',
    ]);
    const told = botMessages(t, owner).length;

    await page.click(`[data-approve="${first}"]`);
    expect(dialogs.at(-1)).toBe(
      `Approve ${first}: credit $25 to the live wallet of customer ${m.customerId}?`,
    );
    await expect
      .poll(() => page.textContent('main .status'))
      .toBe(`Approved ${first}: $25 credited to customer ${m.customerId} (live); the balance is $25.`);
    await expect.poll(() => page.locator(`[data-approve="${first}"]`).count()).toBe(0);
    expect(await page.locator(`[data-approve="${second}"]`).count()).toBe(1);
    const c = await adminCall<{ wallets: { live: { balance_usd: number } } }>(
      t,
      'GET',
      `/admin/v1/customers/${m.customerId}`,
    );
    expect(c.wallets.live.balance_usd).toBe(25);
    // The person who asked is told in the chat.
    await t.sim.waitFor(() => botMessages(t, owner)[told]);
    expect(botMessages(t, owner)[told]!.text).toContain(`Your top-up request ${first} was approved.`);

    // Reject: the prompt is the confirmation and carries the reason.
    answer = 'dismiss';
    await page.click(`[data-reject="${second}"]`);
    expect(dialogs.at(-1)).toMatch(new RegExp(`^Reject ${second} \\(\\$10\\.5 to the live wallet`));
    expect(await page.locator(`[data-reject="${second}"]`).count()).toBe(1);
    answer = 'accept';
    promptText = 'no transfer arrived';
    await page.click(`[data-reject="${second}"]`);
    await expect
      .poll(() => page.textContent('main .status'))
      .toBe(`Rejected ${second}; the person who asked is told.`);
    await expect
      .poll(() => page.locator('[data-table=topups] tbody td.muted').textContent())
      .toBe('nothing here');
    await t.sim.waitFor(() => botMessages(t, owner).find((x) => x.text?.includes('no transfer arrived')));

    // Any state: both, decided, with who decided; no buttons on decided requests.
    await page.selectOption('select[name=state]', 'any');
    await page.waitForSelector(`[data-table=topups] code:text("${second}")`);
    const states = await page.locator('[data-table=topups] tbody tr [data-state]').allTextContents();
    expect(states).toEqual(['rejected', 'approved']);
    expect(await page.locator('[data-approve], [data-reject]').count()).toBe(0);
    expect(await page.locator('[data-table=topups]').textContent()).toContain('by root');
  });

  test('Top-ups: a payment that credited nothing is listed as unmatched, with its charge id and no button', async () => {
    const owner = await linkPerson(t, m.customerId, 'owner', person('cent'));
    const asked = await say(t, owner, '/topup 10');
    const id = /Top-up request (tpr_[A-Za-z0-9]+) made/.exec(asked.text ?? '')?.[1];
    expect(id, asked.text).toBeDefined();
    // One cent for a 10.00 request, as Telegram would deliver it.
    const chargeId = `tg_console_${owner.id}`;
    const before = botMessages(t, owner).length;
    t.sim.pushUpdate({
      message: {
        chat: { id: owner.id, type: 'private' },
        from: { id: owner.id, is_bot: false, first_name: owner.first_name },
        successful_payment: {
          currency: 'USD',
          total_amount: 1,
          invoice_payload: id,
          telegram_payment_charge_id: chargeId,
          provider_payment_charge_id: `prov_${chargeId}`,
        },
      },
    });
    expect((await t.sim.waitFor(() => botMessages(t, owner)[before])).text).toMatch(/not credited/);

    await page.click('nav a[data-nav=topups]');
    await page.selectOption('select[name=state]', 'unmatched');
    const row = page.locator('[data-table=topups] tbody tr', {
      has: page.locator(`[data-charge="${chargeId}"]`),
    });
    await row.waitFor();
    const cells = await row.locator('td').allTextContents();
    expect(cells.slice(2, 6)).toEqual(['live', '$0.01', 'unmatched', `@${owner.username} (${owner.id})`]);
    expect(cells[8]).toBe(`charge ${chargeId}: 1 USD (smallest unit), amount or currency differs; refund it`);
    expect(await row.locator('[data-approve], [data-reject]').count()).toBe(0);
    // The request it named is still pending, with its buttons.
    await page.selectOption('select[name=state]', 'pending');
    await page.waitForSelector(`[data-approve="${id}"]`);
  });

  test('a viewer sees the people and the requests, and no button', async () => {
    const payer = await linkPerson(t, m.customerId, 'owner', person('asker'));
    const asked = await say(t, payer, '/topup 7');
    const id = /Top-up request (tpr_[A-Za-z0-9]+) made/.exec(asked.text ?? '')?.[1];
    await page.click('nav button.link');
    await page.waitForSelector('form.signin');
    await signInAs(viewerToken);
    await openCustomer();
    expect(await page.locator('[data-table=bot-users] tbody tr').count()).toBeGreaterThan(0);
    expect(await page.locator('[data-form=bot-link]').isVisible()).toBe(false);
    for (const b of await page.locator('[data-unbind]').all()) expect(await b.isVisible()).toBe(false);
    await page.click('nav a[data-nav=topups]');
    await page.waitForSelector(`[data-table=topups] code:text("${id}")`);
    expect(await page.locator('[data-approve], [data-reject]').count()).toBe(0);
  });

  test('with no bot the link control is off, with a note saying why', async () => {
    // The admin routes read the bot from the context on each request: without it, as with no
    // BOT_TOKEN, GET /admin/v1/bot says enabled: false (the bot itself keeps running).
    const door = t.ctx.bot;
    t.ctx.bot = undefined;
    try {
      await page.click('nav button.link');
      await page.waitForSelector('form.signin');
      await signInAs(ADMIN_TOKEN);
      await openCustomer();
      await page.waitForSelector('[data-note=bot-off]:not([hidden])');
      expect(await page.textContent('[data-note=bot-off]')).toBe(
        'The chat bot is off (no BOT_TOKEN is set): no link can be made.',
      );
      expect(await page.isDisabled('[data-form=bot-link] button[type=submit]')).toBe(true);
      expect(await page.isDisabled('[data-form=bot-link] select[name=role]')).toBe(true);
    } finally {
      t.ctx.bot = door;
    }
    expect(problems).toEqual([]);
  });
});
