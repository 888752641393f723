// The manual redeem and the checker from the chat (docs/reference/bot.md#commands): validated as POST /v1/redeem,
// confirmed with a button that runs it once, run as a job of channel bot by the job worker,
// reported by editing the message; outside the API quota (no plan, no hold, no bill, no
// webhook event). Through the stand-in for the Bot API over real HTTP, on the suite's database.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import type { SimMessage, SimUser } from '../../src/dev/bot-api-sim.ts';
import { adminCall, bearer, createMerchant, type Merchant } from '../helpers/app.ts';
import {
  actedOn,
  type BotTestApp,
  botMessages,
  createBotTestApp,
  fields,
  linkPerson,
  say,
} from '../helpers/bot.ts';
import { me, uniqueCode, walletInvariants } from '../helpers/redeem.ts';

let t: BotTestApp;
beforeAll(async () => {
  t = await createBotTestApp({ env: { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' } });
});
afterAll(async () => {
  await t?.close();
});

const PLAYER = '5123456789';

/** A merchant with a test key and $5 in both wallets, and a linked owner acting in test mode. */
async function shop(spec: Parameters<typeof createMerchant>[1] = {}): Promise<{ m: Merchant; who: SimUser }> {
  const m = await createMerchant(t, { topup: { live: 5, test: 5 }, ...spec });
  const who = await linkPerson(t, m.customerId, 'owner');
  expect((await say(t, who, '/mode test')).text).toContain('[test]');
  return { m, who };
}

/** Sends /redeem, checks the confirmation, presses `button`; returns the confirmation message. */
async function confirm(who: SimUser, args: string): Promise<SimMessage> {
  const msg = await say(t, who, `/redeem ${args}`);
  expect(msg.reply_markup).toBeDefined();
  return msg;
}

const buttons = (msg: SimMessage) =>
  (
    (msg.reply_markup as { inline_keyboard?: { text: string; callback_data: string }[][] })
      ?.inline_keyboard ?? []
  ).flat();

async function press(who: SimUser, msg: SimMessage, label: 'Redeem' | 'Cancel', stale = false) {
  const data =
    buttons(msg).find((b) => b.text === label)?.callback_data ?? `br:none:${label[0]!.toLowerCase()}`;
  return t.sim.press(who, msg, data, { stale });
}

/** The confirmation message once its redeem has ended (its text then has `activated:`). */
async function finished(who: SimUser, messageId: number): Promise<string> {
  return t.sim.waitFor(
    () => botMessages(t, who).find((x) => x.message_id === messageId && x.text?.includes('activated:'))?.text,
    20_000,
  );
}

const ledgerCount = async (customerId: number) =>
  Number(
    (
      await t.ctx.db.query<{ n: string }>(
        'select count(*) as n from wallet_ledger where customer_id = $1 and kind = $2',
        [customerId, 'charge'],
      )
    ).rows[0]!.n,
  );

describe('stock import from the chat', () => {
  test('/addstock with codes in the text: counted, the message deleted, audited; the codes never echoed', async () => {
    const { m, who } = await shop();
    const a = uniqueCode('OK', '-660');
    const b = uniqueCode('OK', '-660');
    const sent = await t.sim.sendText(who, `/addstock 660 ${a}, ${b}\n${a}\nbad!code`);
    const reply = await t.sim.waitFor(() => botMessages(t, who).find((x) => x.text?.includes('added:')));
    expect(reply.text!.split('\n')[0]).toBe('[test]');
    expect(fields(reply.text)).toMatchObject({ added: '2', duplicates: '1', rejected: '1' });
    await t.sim.waitFor(() => t.sim.messages(who.id).find((x) => x.message_id === sent.messageId)?.deleted);
    const stock = (await say(t, who, '/stock')).text!;
    expect(stock).toMatch(/^\[test\]\n/);
    expect(stock).toContain('660: 2');
    expect(fields(stock)).toMatchObject({ total_available: '2', total_uc_available: '1320' });
    const audit = await t.ctx.db.query<{ actor: string; details: unknown }>(
      `select actor, details from audit_events where action = 'stock.import' and customer_id = $1`,
      [m.customerId],
    );
    expect(audit.rows).toEqual([
      {
        actor: `telegram:${who.id}`,
        details: { mode: 'test', category: '660', added: 2, duplicates: 1, rejected: 1 },
      },
    ]);
    const outgoing = JSON.stringify(t.sim.calls.filter((c) => c.method !== 'getUpdates'));
    expect(outgoing).not.toContain(a);
    expect(outgoing).not.toContain(b);
    expect(t.logs.join('')).not.toContain(a);
  });

  test('/addstock from a .csv document (first column, header skipped); an unknown category imports nothing', async () => {
    const { who } = await shop();
    const codes = [uniqueCode('OK', '-60'), uniqueCode('OK', '-60'), uniqueCode('OK', '-60')];
    const doc = await t.sim.sendDocument(who, {
      fileName: 'codes.csv',
      content: `code,note\n${codes.map((c) => `${c},box 1`).join('\n')}\n`,
      caption: '/addstock 60',
    });
    const reply = await t.sim.waitFor(() => botMessages(t, who).find((x) => x.text?.includes('added:')));
    expect(fields(reply.text)).toMatchObject({ added: '3', duplicates: '0', rejected: '0' });
    await t.sim.waitFor(() => t.sim.messages(who.id).find((x) => x.message_id === doc.messageId)?.deleted);
    const bad = await say(t, who, `/addstock 999 ${uniqueCode()}`);
    expect(bad.text).toMatch(/unknown category/);
    expect(bad.text).toContain('Example:');
    expect(fields((await say(t, who, '/stock')).text)).toMatchObject({ total_available: '3' });
  });
});

describe('the manual redeem', () => {
  test('from stock: confirmed once, run as a bot job, reported; no quota, no bill, no webhook', async () => {
    const { m, who } = await shop();
    await t.sim.sendText(who, `/addstock 660 ${uniqueCode('OK', '-660')} ${uniqueCode('OK', '-660')}`);
    await t.sim.waitFor(() => botMessages(t, who).find((x) => x.text?.includes('added: 2')));
    const hook = await t.api.inject({
      method: 'POST',
      url: '/v1/webhook',
      headers: bearer(m.key),
      payload: { url: 'https://127.0.0.1:9/hook' },
    });
    expect(hook.statusCode, hook.body).toBe(200);
    const before = await me(t, m.key);
    const msg = await confirm(who, `${PLAYER} packs=660x1`);
    expect(msg.text!.split('\n')[0]).toBe('[test]');
    expect(fields(msg.text)).toEqual({ player_id: PLAYER, codes: '1', source: 'stock', uc: '660' });
    // Nothing is reserved before the press.
    expect(fields((await say(t, who, '/stock')).text)['total_available']).toBe('2');
    await press(who, msg, 'Redeem');
    const end = await finished(who, msg.message_id);
    expect(end.split('\n')[0]).toBe('[test]');
    expect(end).toMatch(/^\*+[A-Z0-9-]{4} activated consumed$/m);
    expect(fields(end)).toMatchObject({ activated: '1', uc_delivered: '660' });
    // A second press, and the press's update redelivered, run nothing more.
    await press(who, msg, 'Redeem', true);
    const jobs = await t.ctx.db.query<{ id: string; channel: string }>(
      'select id, channel from jobs where customer_id = $1',
      [m.customerId],
    );
    expect(jobs.rows).toHaveLength(1);
    expect(jobs.rows[0]!.channel).toBe('bot');
    const after = await me(t, m.key);
    expect(after.quota.used_today).toBe(before.quota.used_today);
    expect(after.balance_usd).toBe(before.balance_usd);
    expect(await ledgerCount(m.customerId)).toBe(0);
    await walletInvariants(t, m.customerId, 'test');
    const view = await t.api.inject({
      method: 'GET',
      url: `/v1/jobs/${jobs.rows[0]!.id}`,
      headers: bearer(m.key),
    });
    expect(view.json()).toMatchObject({
      status: 'completed',
      channel: 'bot',
      progress: { total: 1, done: 1 },
    });
    const events = await t.ctx.db.query('select 1 from webhook_events where customer_id = $1', [
      m.customerId,
    ]);
    expect(events.rows).toEqual([]);
    expect(fields((await say(t, who, '/stock')).text)['total_available']).toBe('1');
  });

  test('a button pressed twice at once runs once; the press update delivered twice runs once', async () => {
    const { m, who } = await shop();
    const msg = await confirm(who, `${PLAYER} ${uniqueCode('OK', '-60')} ${uniqueCode('USED', '-60')}`);
    const first = await press(who, msg, 'Redeem');
    t.sim.redeliver(first.updateId);
    await press(who, msg, 'Redeem', true);
    const end = await finished(who, msg.message_id);
    expect(end).toMatch(/activated consumed|activated kept/);
    expect(end).toMatch(/code_used/);
    expect(fields(end)).toMatchObject({ activated: '1', uc_delivered: '60' });
    const jobs = await t.ctx.db.query('select id from jobs where customer_id = $1', [m.customerId]);
    expect(jobs.rows).toHaveLength(1);
    expect(await ledgerCount(m.customerId)).toBe(0);
  });

  test("a press reports in the confirmation's mode, whatever mode the person switched to since", async () => {
    const { m, who } = await shop();
    const msg = await confirm(who, `${PLAYER} ${uniqueCode('OK', '-60')}`);
    expect(msg.text!.split('\n')[0]).toBe('[test]');
    expect((await say(t, who, '/mode live')).text).toContain('[live]');
    await press(who, msg, 'Redeem');
    const end = await finished(who, msg.message_id);
    expect(end.split('\n')[0]).toBe('[test]');
    expect([...msg.edits, end].every((text) => text.startsWith('[test]'))).toBe(true);
    const jobs = await t.ctx.db.query<{ mode: string }>('select mode from jobs where customer_id = $1', [
      m.customerId,
    ]);
    expect(jobs.rows).toEqual([{ mode: 'test' }]);
  });

  test('with no plan at all, outside the quota: a plain code redeem runs and bills nothing', async () => {
    const { m, who } = await shop({ plan: null });
    const msg = await confirm(who, `${PLAYER} ${uniqueCode('OK', '-325')}`);
    expect(fields(msg.text)).toEqual({ player_id: PLAYER, codes: '1', source: 'codes' });
    await press(who, msg, 'Redeem');
    expect(fields(await finished(who, msg.message_id))).toMatchObject({
      activated: '1',
      uc_delivered: '325',
    });
    expect(await ledgerCount(m.customerId)).toBe(0);
  });

  test('bad input is one line with the error code and an example, and nothing is shown to press', async () => {
    const { who } = await shop();
    const cases: [string, RegExp][] = [
      ['123 ABCD1234', /^bad_player: /],
      [PLAYER, /^empty: /],
      [`${PLAYER} uc=7`, /^no_combo: /],
      [`${PLAYER} uc=60`, /^no_stock: /],
      [`${PLAYER} packs=61x1`, /^bad_packs: /],
      [`${PLAYER} packs=660`, /^bad_packs: /],
      [`${PLAYER} bad!code`, /^bad_codes: /],
    ];
    for (const [args, expected] of cases) {
      const reply = await say(t, who, `/redeem ${args}`);
      expect(reply.text).toMatch(expected);
      expect(reply.text).toContain('Example: /redeem');
      expect(reply.reply_markup).toBeUndefined();
    }
  });

  test('a button no feature knows is answered once by the fallback registered last, and runs nothing', async () => {
    const { m, who } = await shop();
    const msg = await confirm(who, `${PLAYER} ${uniqueCode('OK', '-60')}`);
    const answers: string[] = [];
    const off = t.sim.on((e) => {
      if (e.type === 'callback_answer') answers.push(e.text);
    });
    try {
      // Not the redeem's own pattern (br:<id>:r|c), as an old keyboard or a forged payload sends.
      const { updateId } = await t.sim.press(who, msg, 'zz:unknown', { stale: true });
      await actedOn(t, updateId);
      await t.sim.waitFor(() => answers.length > 0);
      expect(answers).toEqual(['This button does nothing any more.']);
      const row = await t.ctx.db.query('select kind from bot_updates where update_id = $1', [updateId]);
      expect(row.rows).toEqual([{ kind: 'callback' }]);
    } finally {
      off();
    }
    const jobs = await t.ctx.db.query('select 1 from jobs where customer_id = $1', [m.customerId]);
    expect(jobs.rows).toEqual([]);
  });

  test('Cancel runs nothing; a press after 10 minutes runs nothing', async () => {
    const { m, who } = await shop();
    const a = await confirm(who, `${PLAYER} ${uniqueCode('OK', '-60')}`);
    await press(who, a, 'Cancel');
    await t.sim.waitFor(() =>
      botMessages(t, who).find((x) => x.message_id === a.message_id && x.text?.includes('cancelled')),
    );
    const b = await confirm(who, `${PLAYER} ${uniqueCode('OK', '-60')}`);
    t.clock.advance(10 * 60 * 1000 + 1000);
    await press(who, b, 'Redeem');
    await t.sim.waitFor(() =>
      botMessages(t, who).find((x) => x.message_id === b.message_id && x.text?.includes('expired')),
    );
    const jobs = await t.ctx.db.query('select 1 from jobs where customer_id = $1', [m.customerId]);
    expect(jobs.rows).toEqual([]);
  });

  test('refused on an expired required subscription, before the confirmation and at the press', async () => {
    const { m, who } = await shop({ subscription: { required: true, expires_at: '2026-12-20T00:00:00Z' } });
    const msg = await confirm(who, `${PLAYER} ${uniqueCode('OK', '-60')}`);
    await adminCall(t, 'PUT', `/admin/v1/customers/${m.customerId}/subscription`, {
      required: true,
      expires_at: '2026-11-01T00:00:00Z',
    });
    await press(who, msg, 'Redeem');
    await t.sim.waitFor(() =>
      botMessages(t, who).find(
        (x) => x.message_id === msg.message_id && x.text?.includes('subscription_expired'),
      ),
    );
    const again = await say(t, who, `/redeem ${PLAYER} ${uniqueCode('OK', '-60')}`);
    expect(again.text).toMatch(/^subscription_expired: .*2026-11-01/);
    expect(again.reply_markup).toBeUndefined();
    expect((await t.ctx.db.query('select 1 from jobs where customer_id = $1', [m.customerId])).rows).toEqual(
      [],
    );
  });
});

describe('the checker', () => {
  test('/check: one line per masked code; a code checked valid still activates afterwards; nothing billed', async () => {
    const { m, who } = await shop();
    const good = uniqueCode('OK', '-60');
    const reply = await say(
      t,
      who,
      `/check ${good} ${uniqueCode('USED')} ${uniqueCode('INVALID')} ${uniqueCode('TIMEOUT')}`,
    );
    const lines = reply.text!.split('\n');
    expect(lines[0]).toBe('[test]');
    expect(lines.slice(1).map((l) => l.split(' ')[1])).toEqual(['valid', 'used', 'invalid', 'unknown']);
    expect(lines[1]).toBe(`${'*'.repeat(good.length - 4)}${good.slice(-4)} valid`);
    expect(JSON.stringify(t.sim.calls.filter((c) => c.method !== 'getUpdates'))).not.toContain(good);
    const msg = await confirm(who, `${PLAYER} ${good}`);
    await press(who, msg, 'Redeem');
    expect(fields(await finished(who, msg.message_id))).toMatchObject({ activated: '1' });
    expect((await say(t, who, `/check ${good}`)).text).toMatch(/ used$/);
    expect(await ledgerCount(m.customerId)).toBe(0);
  });

  test('the daily cap: beyond BOT_CHECKS_PER_DAY one line says when it resets', async () => {
    const { who } = await shop();
    const codes = Array.from({ length: 50 }, () => uniqueCode('OK'));
    const capped = await createBotTestApp({ env: { BOT_CHECKS_PER_DAY: '3' } });
    try {
      const m = await createMerchant(capped);
      const p = await linkPerson(capped, m.customerId);
      expect((await say(capped, p, `/check ${codes.slice(0, 2).join(' ')}`)).text).toMatch(/valid/);
      const refused = await say(capped, p, `/check ${codes.slice(2, 4).join(' ')}`);
      expect(refused.text).toMatch(/limit.*1 left today.*2026-11-23T00:00:00Z/);
    } finally {
      await capped.close();
    }
    expect((await say(t, who, `/check ${[...codes, 'ONEMORE1'].join(' ')}`)).text).toMatch(/at most 50/);
  });
});
