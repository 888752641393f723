// Telegram payments of top-up invoices that must not credit (docs/reference/bot.md#top-ups with its amendments):
// a payment credits what was paid, only for a pending request of a customer the payer owns now;
// anything else is recorded unmatched once per charge id (admin list, CLI, audit), credits nothing
// and is told in one line that shows no one else's numbers. The pre-checkout refuses the same
// payers. Unbinding, binding elsewhere (or as staff), disabling the customer and /cancel void a
// pending request. Through the Bot API stand-in and a real database.
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { cancelPendingTopups } from '../../src/core/bot/topup-endings.ts';
import type { SimMessage, SimUser } from '../../src/dev/bot-api-sim.ts';
import { listenAdmin, runAdminCli } from '../helpers/admin-cli.ts';
import { ADMIN_TOKEN, adminCall, createMerchant } from '../helpers/app.ts';
import {
  actedOn,
  type BotTestApp,
  botMessages,
  createBotTestApp,
  fields,
  linkPerson,
  person,
  say,
} from '../helpers/bot.ts';
import { walletInvariants } from '../helpers/redeem.ts';

let t: BotTestApp;
beforeAll(async () => {
  t = await createBotTestApp({ env: { BOT_PAYMENT_PROVIDER_TOKEN: 'provider:TEST:0123456789' } });
});
afterAll(async () => {
  await t?.close();
});

/** What the live wallet holds and the top-up entries it has (ledger rows, not a reply). */
async function liveWallet(customerId: number) {
  const entries = await t.ctx.db.query<{ amount: string }>(
    `select amount_micros as amount from wallet_ledger where customer_id = $1 and mode = 'live' and kind = 'topup'`,
    [customerId],
  );
  const w = await walletInvariants(t, customerId, 'live');
  // The balance is what the ledger says, whatever was refused on the way.
  expect(Number(w.balance)).toBe(Number(w.ledger));
  return { topups: entries.rows.map((r) => Number(r.amount)), balance: Number(w.balance) };
}

const invoiceOf = async (who: SimUser, usd: string) => {
  const m = await say(t, who, `/topup ${usd}`);
  if (!m.invoice) throw new Error(`no invoice: ${m.text}`);
  return m;
};

let charges = 0;
/**
 * A successful_payment arriving in the payer's chat as Telegram would send it, whatever the
 * pre-checkout said (a payment the bot cannot stop: a provider's late answer, a forged update).
 * Waits for the bot's answer in that chat and returns it with the update's id.
 */
async function paymentArrives(
  from: SimUser,
  payload: string,
  x: { total: number; currency?: string; chargeId?: string },
): Promise<{ reply: SimMessage; updateId: number; chargeId: string }> {
  const chargeId = x.chargeId ?? `tg_unmatched_${Date.now()}_${++charges}`;
  const before = botMessages(t, from).length;
  t.clock.advance(500);
  const updateId = t.sim.pushUpdate({
    message: {
      chat: { id: from.id, type: 'private' },
      from: { id: from.id, is_bot: false, first_name: from.first_name },
      successful_payment: {
        currency: x.currency ?? 'USD',
        total_amount: x.total,
        invoice_payload: payload,
        telegram_payment_charge_id: chargeId,
        provider_payment_charge_id: `prov_${chargeId}`,
      },
    },
  });
  const reply = await t.sim.waitFor(() => botMessages(t, from)[before]);
  return { reply, updateId, chargeId };
}

type Listed = Record<string, unknown> & { id: string; state: string };
const listed = async (query: string) =>
  (await adminCall<{ requests: Listed[] }>(t, 'GET', `/admin/v1/topup-requests?${query}`)).requests;

/** The one line an unmatched payment gets: mode first, no numbers of any account. */
function expectUnmatchedLine(reply: SimMessage, why: RegExp) {
  expect(reply.text).toMatch(
    /^\[live\] Payment received but not credited \(.*\): an operator will refund it\.$/,
  );
  expect(reply.text).toMatch(why);
  expect(reply.text).not.toContain('\n');
  expect(reply.text).not.toMatch(/balance|\d/);
}

async function auditOf(action: string, target: string) {
  const r = await t.ctx.db.query<{
    actor: string;
    customerId: string | null;
    details: Record<string, unknown>;
  }>(
    `select actor, customer_id as "customerId", details from audit_events where action = $1 and target = $2`,
    [action, target],
  );
  return r.rows.map((a) => ({ ...a, customerId: a.customerId === null ? null : Number(a.customerId) }));
}

async function approveRefused(id: string, state: string) {
  const res = await t.admin.inject({
    method: 'POST',
    url: `/admin/v1/topup-requests/${id}/approve`,
    headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
  });
  expect({ status: res.statusCode, body: res.json() }).toEqual({
    status: 409,
    body: {
      ok: false,
      error_code: 'conflict',
      message: `the top-up request is ${state}, not pending`,
      request_id: res.headers['x-request-id'],
    },
  });
}

describe('a payment that does not match its request', () => {
  test('1 cent for a 10.00 request: unmatched with its charge id, audited, told in one line; redelivered, recorded once', async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId, 'owner');
    const invoice = await invoiceOf(who, '10');
    const requestId = invoice.invoice!.payload;
    // Telegram would not charge it: the pre-checkout refuses the amount.
    const asked = await t.sim.pay(who, invoice, { totalAmount: 1 });
    expect(asked).toEqual({ accepted: false, errorMessage: expect.stringMatching(/amount or currency/) });

    const { reply, updateId, chargeId } = await paymentArrives(who, requestId, { total: 1 });
    expectUnmatchedLine(reply, /amount or currency does not match/);
    expect(await liveWallet(m.customerId)).toEqual({ topups: [], balance: 0 });

    const unmatched = await listed(`state=unmatched&customer_id=${m.customerId}`);
    expect(unmatched).toEqual([
      {
        id: expect.stringMatching(/^tpu_[A-Za-z0-9]{24}$/),
        customer_id: m.customerId,
        mode: 'live',
        usd: 0.01,
        state: 'unmatched',
        telegram_user_id: who.id,
        created_at: expect.stringMatching(/Z$/),
        decided_at: null,
        decided_by: null,
        reason: 'amount_mismatch',
        telegram_payment_charge_id: chargeId,
        provider_payment_charge_id: `prov_${chargeId}`,
        total_amount: 1,
        currency: 'USD',
        invoice_payload: requestId,
        topup_request_id: requestId,
        payer_customer_id: m.customerId,
      },
    ]);
    const entryId = unmatched[0]!.id;
    expect(await auditOf('topup.unmatched', entryId)).toEqual([
      {
        actor: `telegram:${who.id}`,
        customerId: m.customerId,
        details: {
          reason: 'amount_mismatch',
          telegram_payment_charge_id: chargeId,
          provider_payment_charge_id: `prov_${chargeId}`,
          total_amount: 1,
          currency: 'USD',
          invoice_payload: requestId,
          telegram_user_id: who.id,
        },
      },
    ]);
    // The request itself is untouched: still pending, and an unmatched payment is no request to
    // decide on.
    expect((await listed(`state=pending&customer_id=${m.customerId}`)).map((r) => r.id)).toEqual([requestId]);
    const decide = await t.admin.inject({
      method: 'POST',
      url: `/admin/v1/topup-requests/${entryId}/approve`,
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(decide.statusCode).toBe(409);
    expect(decide.json()).toMatchObject({ ok: false, error_code: 'conflict' });

    // Redelivered: the same update, and a new update with the same charge id. One row, no line.
    const told = botMessages(t, who).length;
    t.sim.redeliver(updateId);
    await paymentArrivesSilently(who, requestId, chargeId);
    expect(botMessages(t, who)).toHaveLength(told);
    const rows = await t.ctx.db.query('select 1 from topup_payments where charge_id = $1', [chargeId]);
    expect(rows.rows).toHaveLength(1);
    expect(await auditOf('topup.unmatched', entryId)).toHaveLength(1);

    // The right payment still pays it.
    const paid = await t.sim.pay(who, invoice, { chargeId: `tg_ok_${chargeId}` });
    expect(paid.accepted).toBe(true);
    const credited = await t.sim.waitFor(() => botMessages(t, who)[told]);
    expect(fields(credited.text)).toMatchObject({ amount_usd: '10.00', balance_usd: '10.00' });
    expect(await liveWallet(m.customerId)).toEqual({ topups: [10_000_000], balance: 10_000_000 });
  });

  test('the wrong currency: refused at pre-checkout; paid anyway, unmatched and nothing credited', async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId, 'owner');
    const invoice = await invoiceOf(who, '10');
    expect((await t.sim.pay(who, invoice, { currency: 'EUR' })).accepted).toBe(false);
    const { reply, chargeId } = await paymentArrives(who, invoice.invoice!.payload, {
      total: 1000,
      currency: 'EUR',
    });
    expectUnmatchedLine(reply, /amount or currency/);
    expect(await liveWallet(m.customerId)).toEqual({ topups: [], balance: 0 });
    expect(await listed(`state=unmatched&customer_id=${m.customerId}`)).toMatchObject([
      { state: 'unmatched', currency: 'EUR', total_amount: 1000, telegram_payment_charge_id: chargeId },
    ]);
  });

  test('an unknown payload and a paid request: unmatched, never an error', async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId, 'owner');
    const unknown = await paymentArrives(who, 'tpr_doesnotexist000000000000', { total: 500 });
    expectUnmatchedLine(unknown.reply, /no known top-up request/);
    const forged = await paymentArrives(who, 'not a request id at all', { total: 500 });
    expectUnmatchedLine(forged.reply, /no known top-up request/);
    const invoice = await invoiceOf(who, '5');
    expect((await t.sim.pay(who, invoice, { chargeId: `tg_paid_${who.id}` })).accepted).toBe(true);
    await t.sim.waitFor(() =>
      botMessages(t, who).find((x) => /^\[live\]\nPayment received: top-up/.test(x.text ?? '')),
    );
    const twice = await paymentArrives(who, invoice.invoice!.payload, { total: 500 });
    expectUnmatchedLine(twice.reply, /no longer pending/);
    expect(await liveWallet(m.customerId)).toEqual({ topups: [5_000_000], balance: 5_000_000 });
    const rows = await listed(`state=unmatched&customer_id=${m.customerId}`);
    expect(rows.map((r) => [r.reason, r.topup_request_id, r.customer_id])).toEqual([
      ['not_pending', invoice.invoice!.payload, m.customerId],
      ['unknown_request', null, m.customerId],
      ['unknown_request', null, m.customerId],
    ]);
  });
});

describe('who may pay', () => {
  test("another customer's owner is refused at pre-checkout; paid anyway, unmatched, and shown nothing of the other customer", async () => {
    const a = await createMerchant(t);
    const b = await createMerchant(t, { topup: { live: 40 } });
    const nameB = (
      await adminCall<{ customer: { name: string } }>(t, 'GET', `/admin/v1/customers/${b.customerId}`)
    ).customer.name;
    const ownerA = await linkPerson(t, a.customerId, 'owner');
    const ownerB = await linkPerson(t, b.customerId, 'owner');
    const invoiceB = await invoiceOf(ownerB, '10');
    const asked = await t.sim.pay(ownerA, invoiceB);
    expect(asked).toEqual({ accepted: false, errorMessage: expect.stringMatching(/Only an owner/) });
    expect(asked.errorMessage).not.toContain(nameB);
    expect(asked.errorMessage).not.toMatch(/\d/);

    const { reply, chargeId } = await paymentArrives(ownerA, invoiceB.invoice!.payload, { total: 1000 });
    expectUnmatchedLine(reply, /not an owner of the account/);
    expect(reply.text).not.toContain(nameB);
    expect(await liveWallet(b.customerId)).toEqual({ topups: [40_000_000], balance: 40_000_000 });
    expect(await liveWallet(a.customerId)).toEqual({ topups: [], balance: 0 });
    // Listed under the customer whose invoice it named, and found by the payer's customer too.
    const forB = await listed(`state=unmatched&customer_id=${b.customerId}`);
    expect(forB).toMatchObject([
      {
        customer_id: b.customerId,
        payer_customer_id: a.customerId,
        telegram_user_id: ownerA.id,
        reason: 'not_owner',
        telegram_payment_charge_id: chargeId,
      },
    ]);
    expect((await listed(`state=unmatched&customer_id=${a.customerId}`)).map((r) => r.id)).toEqual([
      forB[0]!.id,
    ]);
    // B's request is still B's to pay.
    expect((await listed(`state=pending&customer_id=${b.customerId}`)).map((r) => r.id)).toEqual([
      invoiceB.invoice!.payload,
    ]);
  });

  test('staff of the customer are refused at pre-checkout and their payment is unmatched', async () => {
    const m = await createMerchant(t);
    const owner = await linkPerson(t, m.customerId, 'owner');
    const staff = await linkPerson(t, m.customerId, 'staff');
    const invoice = await invoiceOf(owner, '12');
    expect(await t.sim.pay(staff, invoice)).toEqual({
      accepted: false,
      errorMessage: expect.stringMatching(/Only an owner/),
    });
    const { reply } = await paymentArrives(staff, invoice.invoice!.payload, { total: 1200 });
    expectUnmatchedLine(reply, /not an owner/);
    expect(await liveWallet(m.customerId)).toEqual({ topups: [], balance: 0 });
  });

  test('the invoice carries a start parameter, so a forwarded copy cannot be paid from another chat', async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId, 'owner');
    const invoice = await invoiceOf(who, '3');
    const sent = t.sim.calls.filter(
      (c) => c.method === 'sendInvoice' && c.params.payload === invoice.invoice!.payload,
    );
    expect(sent).toHaveLength(1);
    expect(sent[0]!.params).toMatchObject({ start_parameter: 'topup', currency: 'USD' });
  });
});

describe('a pending request is the person’s and the customer’s', () => {
  const botUserId = async (customerId: number, who: SimUser) => {
    const r = await adminCall<{ users: { user_id: string; telegram_user_id: number }[] }>(
      t,
      'GET',
      `/admin/v1/customers/${customerId}/bot-users`,
    );
    return r.users.find((u) => u.telegram_user_id === who.id)!.user_id;
  };

  test('unbinding the person voids it: the pre-checkout refuses, a payment is unmatched, approve is 409', async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId, 'owner');
    const invoice = await invoiceOf(who, '10');
    const id = invoice.invoice!.payload;
    const userId = await botUserId(m.customerId, who);
    await adminCall(t, 'POST', `/admin/v1/bot-users/${userId}/unbind`);
    expect(await listed(`customer_id=${m.customerId}`)).toMatchObject([
      { id, state: 'rejected', decided_by: 'root', reason: 'voided: the person was unbound' },
    ]);
    expect((await auditOf('bot.unbind', userId))[0]!.details).toMatchObject({ voided_topups: [id] });
    expect((await t.sim.pay(who, invoice)).accepted).toBe(false);
    const { reply } = await paymentArrives(who, id, { total: 1000 });
    expectUnmatchedLine(reply, /not an owner/);
    await approveRefused(id, 'rejected');
    expect(await liveWallet(m.customerId)).toEqual({ topups: [], balance: 0 });
  });

  test('disabling the customer voids it', async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId, 'owner');
    const invoice = await invoiceOf(who, '10');
    const id = invoice.invoice!.payload;
    await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/disable`);
    expect(await listed(`state=rejected&customer_id=${m.customerId}`)).toMatchObject([
      { id, decided_by: 'root', reason: 'voided: the customer was disabled' },
    ]);
    expect((await auditOf('customer.disable', String(m.customerId)))[0]!.details).toEqual({
      voided_topups: [id],
    });
    const { reply } = await paymentArrives(who, id, { total: 1000 });
    expectUnmatchedLine(reply, /not an owner|no longer pending/);
    await approveRefused(id, 'rejected');
    // Enabled again, the voided request stays void.
    await adminCall(t, 'POST', `/admin/v1/customers/${m.customerId}/enable`);
    expect((await t.sim.pay(who, invoice)).accepted).toBe(false);
    expect(await liveWallet(m.customerId)).toEqual({ topups: [], balance: 0 });
  });

  test('binding the person elsewhere voids it; their payment credits neither customer', async () => {
    const a = await createMerchant(t);
    const b = await createMerchant(t);
    const who = await linkPerson(t, a.customerId, 'owner');
    const invoice = await invoiceOf(who, '10');
    const id = invoice.invoice!.payload;
    await adminCall(t, 'POST', `/admin/v1/bot-users/${await botUserId(a.customerId, who)}/unbind`);
    await linkPerson(t, b.customerId, 'owner', who);
    expect((await t.sim.pay(who, invoice)).accepted).toBe(false);
    const { reply } = await paymentArrives(who, id, { total: 1000 });
    expectUnmatchedLine(reply, /not an owner/);
    expect(await liveWallet(a.customerId)).toEqual({ topups: [], balance: 0 });
    expect(await liveWallet(b.customerId)).toEqual({ topups: [], balance: 0 });
    await approveRefused(id, 'rejected');
  });

  test('bound again to the same customer as staff voids it', async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId, 'owner');
    const invoice = await invoiceOf(who, '10');
    const id = invoice.invoice!.payload;
    const link = await adminCall<{ token: string }>(
      t,
      'POST',
      `/admin/v1/customers/${m.customerId}/bot-links`,
      { role: 'staff' },
      201,
    );
    expect((await say(t, who, `/start ${link.token}`)).text).toMatch(/^Linked to .* as staff/);
    expect(await listed(`customer_id=${m.customerId}`)).toMatchObject([
      {
        id,
        state: 'rejected',
        decided_by: `telegram:${who.id}`,
        reason: 'voided: the person was bound again as staff',
      },
    ]);
    const { reply } = await paymentArrives(who, id, { total: 1000 });
    expectUnmatchedLine(reply, /not an owner/);
    expect(await liveWallet(m.customerId)).toEqual({ topups: [], balance: 0 });
  });

  test("cancelPendingTopups (the chat's /cancel) voids the person's pending requests of that customer only", async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId, 'owner');
    const other = await linkPerson(t, m.customerId, 'owner', person('owner2'));
    const mine = await invoiceOf(who, '10');
    const theirs = await invoiceOf(other, '11');
    const voided = await cancelPendingTopups(t.ctx.db, {
      botUserId: await botUserId(m.customerId, who),
      customerId: m.customerId,
      now: t.clock.now(),
    });
    expect(voided).toEqual([mine.invoice!.payload]);
    expect(
      await cancelPendingTopups(t.ctx.db, {
        telegramUserId: who.id,
        customerId: m.customerId,
        now: t.clock.now(),
      }),
    ).toEqual([]);
    expect(await listed(`customer_id=${m.customerId}`)).toMatchObject([
      { id: theirs.invoice!.payload, state: 'pending' },
      {
        id: mine.invoice!.payload,
        state: 'rejected',
        decided_by: `telegram:${who.id}`,
        reason: 'voided: cancelled in the chat',
      },
    ]);
    expect((await t.sim.pay(who, mine)).accepted).toBe(false);
    await approveRefused(mine.invoice!.payload, 'rejected');
  });
});

describe('operators see unmatched payments', () => {
  test('the CLI lists them (text and --json), in the same listing as the requests', async () => {
    const m = await createMerchant(t);
    const who = await linkPerson(t, m.customerId, 'owner');
    const invoice = await invoiceOf(who, '10');
    const { chargeId } = await paymentArrives(who, invoice.invoice!.payload, { total: 1 });
    const url = await listenAdmin(t.admin);
    const text = await runAdminCli(url, [
      'topups',
      'list',
      '--state',
      'unmatched',
      '--customer',
      String(m.customerId),
    ]);
    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toMatch(/unmatched/);
    expect(text.stdout).toContain(chargeId);
    expect(text.stdout).toContain('amount_mismatch');
    const json = await runAdminCli(url, [
      'topups',
      'list',
      '--state',
      'unmatched',
      '--customer',
      String(m.customerId),
      '--json',
    ]);
    expect(json.code, json.stderr).toBe(0);
    expect(JSON.parse(json.stdout).requests).toMatchObject([
      { state: 'unmatched', telegram_payment_charge_id: chargeId, total_amount: 1 },
    ]);
    // Without a state, both: the unmatched payment (newer) and the request it named.
    expect((await listed(`customer_id=${m.customerId}`)).map((r) => r.state)).toEqual([
      'unmatched',
      'pending',
    ]);
    const bad = await t.admin.inject({
      method: 'GET',
      url: '/admin/v1/topup-requests?state=refunded',
      headers: { authorization: `Bearer ${ADMIN_TOKEN}` },
    });
    expect(bad.statusCode).toBe(400);
  });
});

/** A payment update that gets no new message (a duplicate charge): waits until it is acted on. */
async function paymentArrivesSilently(from: SimUser, payload: string, chargeId: string) {
  t.clock.advance(500);
  const updateId = t.sim.pushUpdate({
    message: {
      chat: { id: from.id, type: 'private' },
      from: { id: from.id, is_bot: false, first_name: from.first_name },
      successful_payment: {
        currency: 'USD',
        total_amount: 1,
        invoice_payload: payload,
        telegram_payment_charge_id: chargeId,
        provider_payment_charge_id: `prov_${chargeId}`,
      },
    },
  });
  await actedOn(t, updateId);
}
