// The bot's wallet (docs/reference/bot.md#top-ups) and alerts (docs/reference/bot.md#alerts): test top-ups at once; live requests approved
// or rejected by an operator (credited once, told either way); Telegram invoices, pre-checkout and
// payments credited once per charge id; owner-only commands; alerts sent once per occurrence,
// again only after they cleared, and not again after a restart. Through the Bot API stand-in.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { startBot } from '../../src/bot/index.ts';
import type { SimUser } from '../../src/dev/bot-api-sim.ts';
import { adminCall, createMerchant } from '../helpers/app.ts';
import { type BotTestApp, botMessages, createBotTestApp, fields, linkPerson, say } from '../helpers/bot.ts';
import { walletInvariants } from '../helpers/redeem.ts';

const topups = async (t: BotTestApp, customerId: number, mode: string) =>
  (
    await t.ctx.db.query<{ amount: string; actor: string }>(
      `select amount_micros as amount, actor from wallet_ledger where customer_id = $1 and mode = $2 and kind = 'topup' order by id`,
      [customerId, mode],
    )
  ).rows.map((r) => ({ amount: Number(r.amount), actor: r.actor }));

describe('top-ups decided by an operator (no payment provider)', () => {
  let t: BotTestApp;
  beforeAll(async () => {
    t = await createBotTestApp();
  });
  afterAll(async () => {
    await t?.close();
  });

  test('test mode credits the test wallet at once, as the person', async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId, 'owner');
    await say(t, who, '/mode test');
    const reply = await say(t, who, '/topup 10.5');
    expect(reply.text!.split('\n')[0]).toBe('[test]');
    expect(fields(reply.text).balance_usd).toBe('10.50');
    expect(await topups(t, m.customerId, 'test')).toEqual([
      { amount: 10_500_000, actor: `telegram:${who.id}` },
    ]);
    for (const bad of ['0.5', '10001', '1.234', 'ten'])
      expect((await say(t, who, `/topup ${bad}`)).text).toMatch(
        /^the amount must be 1 to 10000 USD.*Example: \/topup/,
      );
    await walletInvariants(t, m.customerId, 'test');
  });

  test('staff cannot top up, see the wallet or set alerts', async () => {
    const m = await createMerchant(t);
    const staff = await linkPerson(t, m.customerId, 'staff');
    for (const cmd of ['/topup 10', '/wallet', '/alerts balance 5'])
      expect((await say(t, staff, cmd)).text).toMatch(/Only an owner/);
    expect(await topups(t, m.customerId, 'live')).toEqual([]);
  });

  test('a live request: listed, approved twice credits once, the chat told once; a rejection credits nothing', async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId, 'owner');
    const reply = await say(t, who, '/topup 25');
    expect(reply.text).toMatch(/^\[live\]\nTop-up request tpr_\w+ made/);
    const id = /tpr_\w+/.exec(reply.text!)![0];
    const list = await adminCall<{ requests: Record<string, unknown>[] }>(
      t,
      'GET',
      `/admin/v1/topup-requests?state=pending&customer_id=${m.customerId}`,
    );
    expect(list.requests).toEqual([
      {
        id,
        customer_id: m.customerId,
        mode: 'live',
        usd: 25,
        state: 'pending',
        telegram_user_id: who.id,
        created_at: expect.any(String),
        decided_at: null,
        decided_by: null,
        reason: null,
      },
    ]);
    const before = botMessages(t, who).length;
    const first = await adminCall<{ request: { state: string }; balance_usd: number }>(
      t,
      'POST',
      `/admin/v1/topup-requests/${id}/approve`,
    );
    expect(first.request.state).toBe('approved');
    const again = await adminCall<{ request: { state: string } }>(
      t,
      'POST',
      `/admin/v1/topup-requests/${id}/approve`,
    );
    expect(again.request.state).toBe('approved');
    expect((await topups(t, m.customerId, 'live')).map((r) => r.amount)).toEqual([25_000_000]);
    const told = await t.sim.waitFor(() => botMessages(t, who)[before]);
    expect(told.text).toMatch(/approved/);
    expect(fields(told.text).balance_usd).toBe('25.00');
    await new Promise((r) => setTimeout(r, 300));
    expect(botMessages(t, who)).toHaveLength(before + 1);

    const second = /tpr_\w+/.exec((await say(t, who, '/topup 7')).text!)![0];
    const n = botMessages(t, who).length;
    await adminCall(t, 'POST', `/admin/v1/topup-requests/${second}/reject`, { reason: 'not paid' });
    expect((await t.sim.waitFor(() => botMessages(t, who)[n])).text).toMatch(/rejected: not paid/);
    await adminCall(t, 'POST', `/admin/v1/topup-requests/${second}/approve`, undefined, 409);
    expect((await topups(t, m.customerId, 'live')).map((r) => r.amount)).toEqual([25_000_000]);
    const audit = await t.ctx.db.query<{ action: string }>(
      `select action from audit_events where customer_id = $1 and action in ('wallet.topup', 'topup.reject') order by seq`,
      [m.customerId],
    );
    expect(audit.rows.map((r) => r.action)).toEqual(['wallet.topup', 'topup.reject']);
    const wallet = await say(t, who, '/wallet');
    expect(wallet.text).toMatch(/^\[live\]\nbalance_usd: 25\.00\n/);
    expect(wallet.text).toContain('kind: topup');
    expect(wallet.text).toContain('pending top-ups: none');
    await walletInvariants(t, m.customerId, 'live');
  });

  test('a request expires after 7 days and can no longer be approved', async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId, 'owner');
    const id = /tpr_\w+/.exec((await say(t, who, '/topup 5')).text!)![0];
    t.clock.advance(7 * 24 * 3600 * 1000 + 1000);
    await adminCall(t, 'POST', `/admin/v1/topup-requests/${id}/approve`, undefined, 409);
    expect(await topups(t, m.customerId, 'live')).toEqual([]);
  });
});

describe('top-ups paid with a Telegram invoice', () => {
  let t: BotTestApp;
  beforeAll(async () => {
    t = await createBotTestApp({ env: { BOT_PAYMENT_PROVIDER_TOKEN: 'provider:TEST:0123456789' } });
  });
  afterAll(async () => {
    await t?.close();
  });

  test('the invoice has the right amount; a wrong amount is refused; one payment delivered twice credits once', async () => {
    const m = await createMerchant(t);
    const who: SimUser = await linkPerson(t, m.customerId, 'owner');
    const invoice = await say(t, who, '/topup 12.50');
    expect(invoice.invoice).toMatchObject({
      currency: 'USD',
      total_amount: 1250,
      payload: expect.stringMatching(/^tpr_/),
    });
    const wrong = await t.sim.pay(who, invoice, { totalAmount: 1000 });
    expect(wrong.accepted).toBe(false);
    expect(wrong.errorMessage).toMatch(/amount/);
    const before = botMessages(t, who).length;
    const paid = await t.sim.pay(who, invoice, { chargeId: 'tg_charge_1' });
    expect(paid.accepted).toBe(true);
    const told = await t.sim.waitFor(() => botMessages(t, who)[before]);
    expect(fields(told.text)).toMatchObject({ amount_usd: '12.50', balance_usd: '12.50' });
    // The same payment delivered again (a new update with the same charge id): nothing more.
    t.sim.pushUpdate({
      message: {
        chat: { id: who.id, type: 'private' },
        from: { id: who.id, is_bot: false, first_name: 'x' },
        date: 1,
        successful_payment: {
          currency: 'USD',
          total_amount: 1250,
          invoice_payload: invoice.invoice!.payload,
          telegram_payment_charge_id: 'tg_charge_1',
          provider_payment_charge_id: 'prov_1',
        },
      },
    });
    await say(t, who, '/help');
    const credits = await topups(t, m.customerId, 'live');
    expect(credits).toEqual([{ amount: 12_500_000, actor: `telegram:${who.id}` }]);
    const req = await adminCall<{ requests: { state: string }[] }>(
      t,
      'GET',
      `/admin/v1/topup-requests?customer_id=${m.customerId}`,
    );
    expect(req.requests[0]!.state).toBe('paid');
    // A paid request's invoice cannot be paid again.
    expect((await t.sim.pay(who, invoice, { chargeId: 'tg_charge_2' })).accepted).toBe(false);
    await walletInvariants(t, m.customerId, 'live');
  });
});

describe('alerts', () => {
  let t: BotTestApp;
  beforeAll(async () => {
    t = await createBotTestApp({
      env: { BOT_ALERT_INTERVAL_MS: '100', WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' },
    });
  });
  afterAll(async () => {
    await t?.close();
  });

  const alertsIn = (who: SimUser, re: RegExp) => botMessages(t, who).filter((x) => re.test(x.text ?? ''));
  const settle = () => new Promise((r) => setTimeout(r, 700));

  test('each condition is told once when it starts, again only after it cleared, and not after a restart', async () => {
    const m = await createMerchant(t, { topup: { live: 3 } });
    const who = await linkPerson(t, m.customerId, 'owner');
    expect(fields((await say(t, who, '/alerts balance 5')).text).balance_below_usd).toBe('5.00');
    await t.sim.waitFor(() => alertsIn(who, /balance is below/).length === 1 || undefined, 5000);
    await settle();
    expect(alertsIn(who, /balance is below/)).toHaveLength(1);
    // A restart (a new bot on the same database) does not tell it again.
    await t.bot.stop();
    t.bot = (await startBot(t.ctx))!;
    t.ctx.bot = t.bot.door;
    await settle();
    expect(alertsIn(who, /balance is below/)).toHaveLength(1);
    // Cleared by a top-up, then started again.
    await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/wallet/topup`, { mode: 'live', usd: 10 });
    await settle();
    await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/wallet/adjust`, {
      mode: 'live',
      usd: -9,
      reason: 'test',
    });
    await t.sim.waitFor(() => alertsIn(who, /balance is below/).length === 2 || undefined, 5000);

    await adminCall(t, 'PUT', `/admin/v1/customers/${m.customerId}/subscription`, {
      required: true,
      expires_at: new Date(t.clock.now().getTime() + 2 * 86_400_000).toISOString(),
    });
    await t.sim.waitFor(() => alertsIn(who, /subscription expires on/).length === 1 || undefined, 5000);
    t.clock.advance(3 * 86_400_000);
    await t.sim.waitFor(() => alertsIn(who, /subscription expired on/).length === 1 || undefined, 5000);
    await settle();
    expect(alertsIn(who, /subscription expire/)).toHaveLength(2);

    expect((await say(t, who, '/alerts off')).text).toContain('alerts: off');
  });

  test('a live stock category at 0 and webhook events that ended failed are told once each', async () => {
    const m = await createMerchant(t, { key: { mode: 'live' }, topup: { live: 5 } });
    const who = await linkPerson(t, m.customerId, 'owner');
    const code = `OK-${Date.now().toString(36).toUpperCase()}-60`;
    await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/stock`, {
      mode: 'live',
      category: '60',
      codes: [code],
    });
    const hook = await t.api.inject({
      method: 'POST',
      url: '/v1/webhook',
      headers: { authorization: `Bearer ${m.key}` },
      payload: { url: 'https://127.0.0.1:9/hook' },
    });
    expect(hook.statusCode, hook.body).toBe(200);
    await settle();
    expect(alertsIn(who, /stock of 60 is empty/)).toHaveLength(0);
    const res = await t.api.inject({
      method: 'POST',
      url: '/v1/redeem',
      headers: { authorization: `Bearer ${m.key}`, 'idempotency-key': code },
      payload: { player_id: '5123456789', packs: { '60': 1 }, async: true },
    });
    expect(res.statusCode).toBe(202);
    await t.sim.waitFor(() => alertsIn(who, /stock of 60 is empty/).length === 1 || undefined, 10_000);
    // The job's event: this app runs no webhook worker, so its drop after every retry is written
    // as the worker writes it (the worker's own drop is tested in webhook-delivery.test.ts).
    const events = await t.ctx.db.query<{ id: string }>(
      'select id from webhook_events where customer_id = $1',
      [m.customerId],
    );
    expect(events.rows).toHaveLength(1);
    t.clock.advance(1000);
    await t.ctx.db.query(
      `update webhook_events set state = 'dropped', finished_at = $2, attempts = 4 where id = $1`,
      [events.rows[0]!.id, t.clock.now()],
    );
    const told = await t.sim.waitFor(() => alertsIn(who, /webhook events failed/)[0], 10_000);
    expect(told.text).toContain(`last_event: ${events.rows[0]!.id}`);
    expect(told.text).toContain('failed_events: 1');
    await settle();
    expect(alertsIn(who, /webhook events failed/)).toHaveLength(1);
    expect(alertsIn(who, /stock of 60 is empty/)).toHaveLength(1);
  });
});
