// The chat bot's door (docs/reference/bot.md#running-the-bot, docs/reference/bot.md#links-and-roles, docs/reference/bot.md#limits-and-safety): links issued by the operator, /start <token>
// binding a Telegram user once, roles, unbinding, and what unlinked people, groups, edited
// messages, redelivered updates and disabled customers get. Through the project's stand-in for
// the Bot API over real HTTP, on the suite's database.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { adminCall, createMerchant, createTestApp } from '../helpers/app.ts';
import {
  actedOn,
  type BotTestApp,
  botMessages,
  createBotTestApp,
  linkPerson,
  person,
  say,
} from '../helpers/bot.ts';

let t: BotTestApp;
beforeAll(async () => {
  t = await createBotTestApp();
});
afterAll(async () => {
  await t?.close();
});

const audit = async (action: string) =>
  (
    await t.ctx.db.query<{
      actor: string;
      customer_id: number;
      target: string;
      details: Record<string, unknown>;
    }>('select actor, customer_id, target, details from audit_events where action = $1 order by seq', [
      action,
    ])
  ).rows;

describe('links and binding', () => {
  test('an operator link binds the person once, with its role; the audit names both sides', async () => {
    const m = await createMerchant(t);
    const res = await t.admin.inject({
      method: 'POST',
      url: `/admin/v1/customers/${m.customerId}/bot-links`,
      headers: { authorization: 'Bearer test-admin-token-0123456789abcdef' },
      payload: { role: 'staff' },
    });
    expect(res.statusCode).toBe(201);
    const link = res.json();
    expect(link).toEqual({
      ok: true,
      request_id: res.headers['x-request-id'],
      link_id: expect.stringMatching(/^bl_/),
      token: expect.stringMatching(/^[A-Za-z0-9]{32,}$/),
      url: `https://t.me/${t.sim.bot.username}?start=${link.token}`,
      expires_at: '2026-11-23T09:00:00Z',
    });
    const who = person();
    const reply = await say(t, who, `/start ${link.token}`);
    expect(reply.text).toMatch(/^Linked to merchant \S+ as staff\./);
    expect(reply.text).toContain('/redeem');
    expect(reply.text).not.toContain('/topup');
    // The same link again, by someone else: used.
    const other = person();
    expect((await say(t, other, `/start ${link.token}`)).text).toMatch(/used already/);
    const users = await adminCall<{ users: unknown[] }>(
      t,
      'GET',
      `/admin/v1/customers/${m.customerId}/bot-users`,
    );
    expect(users.users).toEqual([
      {
        user_id: expect.stringMatching(/^bu_/),
        telegram_user_id: who.id,
        username: who.username,
        role: 'staff',
        bound_at: expect.any(String),
        last_seen_at: expect.any(String),
      },
    ]);
    const binds = (await audit('bot.bind')).filter((a) => a.customer_id === m.customerId);
    expect(binds).toHaveLength(1);
    expect(binds[0]!.actor).toBe(`telegram:${who.id}`);
    expect((await audit('bot.link')).filter((a) => a.customer_id === m.customerId)).toHaveLength(1);
    // No Bot API call held the link's token back to a chat (only the person sent it).
    expect(JSON.stringify(t.sim.calls.filter((c) => c.method !== 'getUpdates'))).not.toContain(link.token);
  });

  test('unknown and expired tokens, and a person bound to another customer, bind nothing', async () => {
    const a = await createMerchant(t);
    const b = await createMerchant(t);
    const who = await linkPerson(t, a.customerId, 'owner');
    expect((await say(t, person(), '/start NoSuchToken0000000000000000000000000000')).text).toMatch(
      /not valid/,
    );
    const link = await adminCall<{ token: string }>(
      t,
      'POST',
      `/admin/v1/customers/${b.customerId}/bot-links`,
      { role: 'owner' },
      201,
    );
    expect((await say(t, who, `/start ${link.token}`)).text).toMatch(/linked to another customer/);
    // The refusal did not use the link: it still binds someone else.
    expect((await say(t, person(), `/start ${link.token}`)).text).toMatch(/^Linked to/);
    const late = await adminCall<{ token: string }>(
      t,
      'POST',
      `/admin/v1/customers/${b.customerId}/bot-links`,
      { role: 'owner' },
      201,
    );
    t.clock.advance(24 * 3600 * 1000 + 1000);
    expect((await say(t, person(), `/start ${late.token}`)).text).toMatch(/expired/);
  });

  test('an unlinked person gets one line and nothing else; groups and edited messages get nothing', async () => {
    const stranger = person();
    const reply = await say(t, stranger, '/stock');
    expect(reply.text).toMatch(/not linked/);
    expect(reply.text).toMatch(/link/);
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId);
    const group = await t.sim.sendText(who, '/stock', { chat: { id: -100123, type: 'group' } });
    const edited = t.sim.pushUpdate({
      edited_message: {
        message_id: 1,
        date: 1,
        chat: { id: who.id, type: 'private' },
        from: { id: who.id, is_bot: false, first_name: 'x' },
        text: '/stock',
      },
    });
    // A later update is acted on: the two before it were seen and ignored.
    await say(t, who, '/help');
    expect(t.sim.botMessages(-100123)).toEqual([]);
    const acted = await t.ctx.db.query('select 1 from bot_updates where update_id = any($1)', [
      [group.updateId, edited],
    ]);
    expect(acted.rows).toEqual([]);
  });

  test('a redelivered update is acted on once', async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId);
    const before = botMessages(t, who).length;
    const sent = await t.sim.sendText(who, '/mode test');
    await actedOn(t, sent.updateId);
    t.sim.redeliver(sent.updateId);
    await say(t, who, '/help');
    const texts = botMessages(t, who)
      .slice(before)
      .map((x) => x.text);
    expect(texts.filter((x) => x?.includes('test mode'))).toHaveLength(1);
  });

  test('unbind: from then on the person is unlinked; a disabled customer is unlinked too', async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId);
    const { users } = await adminCall<{ users: { user_id: string }[] }>(
      t,
      'GET',
      `/admin/v1/customers/${m.customerId}/bot-users`,
    );
    await adminCall(t, 'POST', `/admin/v1/bot-users/${users[0]!.user_id}/unbind`);
    expect((await say(t, who, '/stock')).text).toMatch(/not linked/);
    expect((await audit('bot.unbind')).some((a) => a.target === users[0]!.user_id)).toBe(true);
    await adminCall(t, 'POST', `/admin/v1/bot-users/${users[0]!.user_id}/unbind`, undefined, 404);

    const d = await createMerchant(t);
    const owner = await linkPerson(t, d.customerId);
    await adminCall(t, 'POST', `/admin/v1/customers/${d.customerId}/disable`);
    expect((await say(t, owner, '/account')).text).toMatch(/not linked/);
  });

  test('GET /admin/v1/bot', async () => {
    const r = await adminCall(t, 'GET', '/admin/v1/bot');
    expect(r).toEqual({
      ok: true,
      request_id: expect.any(String),
      enabled: true,
      username: t.sim.bot.username,
      updates: 'polling',
      last_update_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
      linked_users: expect.any(Number),
      // This process holds the polling lease: it is the one that polls.
      polling_instance: r.this_instance,
      this_instance: expect.stringMatching(/\S/),
    });
  });

  test('more than 20 updates in 10 s: one line asks to slow down, the rest are ignored', async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId);
    t.clock.advance(20_000);
    const before = botMessages(t, who).length;
    const sent = [];
    for (let i = 0; i < 25; i++) sent.push(await t.sim.sendText(who, '/help'));
    // Replies to one chat are paced at one a second (Telegram's limit).
    await t.sim.waitFor(() => botMessages(t, who).length >= before + 21, 40_000);
    await new Promise((r) => setTimeout(r, 500));
    const texts = botMessages(t, who)
      .slice(before)
      .map((x) => x.text ?? '');
    expect(texts.filter((x) => x.includes('slow down'))).toHaveLength(1);
    expect(texts.filter((x) => x.includes('Commands:'))).toHaveLength(20);
  }, 60_000);
});

describe('the Bot API', () => {
  test('a 429 with retry_after is waited out and the reply still arrives; metrics count updates and replies', async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId);
    t.sim.failNext('sendMessage', {
      error_code: 429,
      description: 'Too Many Requests: retry after 1',
      retry_after: 1,
    });
    const started = Date.now();
    const reply = await say(t, who, '/help');
    expect(reply.text).toContain('Commands:');
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
    const failed = t.sim.calls.filter((c) => c.method === 'sendMessage' && c.error_code === 429);
    expect(failed.length).toBeGreaterThanOrEqual(1);
    const text = await t.ctx.metrics.registry.metrics();
    expect(text).toMatch(/redeem_gateway_bot_updates_total\{kind="message",result="acted"\} [1-9]/);
    expect(text).toMatch(/redeem_gateway_bot_replies_total\{method="sendMessage"\} [1-9]/);
    // The token travels in the URL path only: no call's parameters, and no log line, hold it.
    expect(JSON.stringify(t.sim.calls.map((c) => c.params))).not.toContain(t.sim.token.split(':')[1]);
    expect(t.logs.join('')).not.toContain(t.sim.token.split(':')[1]);
  });
});

test('without a bot: a link is 409 conflict, GET /admin/v1/bot says disabled', async () => {
  const plain = await createTestApp();
  try {
    const m = await createMerchant(plain);
    await adminCall(plain, 'POST', `/admin/v1/customers/${m.customerId}/bot-links`, { role: 'owner' }, 409);
    const r = await adminCall(plain, 'GET', '/admin/v1/bot');
    expect(r).toMatchObject({ enabled: false, username: null, last_update_at: null });
  } finally {
    await plain.close();
  }
});
