// /wallet, /topup and the payment updates (docs/reference/bot.md#top-ups), owners only. Test mode credits the
// test wallet at once; live mode makes a request, paid with a Telegram invoice when a payment
// provider is configured, else decided by an operator (routes/admin/topups.ts).
import { Composer } from 'grammy';
import { telegramActor } from '../../core/bot/links.ts';
import { preCheckoutRefusal, recordPayment, unmatchedLine } from '../../core/bot/topup-payments.ts';
import {
  createTopupRequest,
  creditTestTopup,
  invoiceAmount,
  parseTopupUsd,
  walletOverview,
} from '../../core/bot/topups.ts';
import { isoUtc } from '../../core/clock.ts';
import { actOnce, type BotContext, personOf } from '../context.ts';
import { ownerOnly } from '../guards.ts';
import { badInput, inMode, labelled, TOPUP_START_PARAMETER, usdText } from '../replies.ts';

/** /wallet and /topup (owners only), and the payment updates of their invoices. */
export const walletFeature = new Composer<BotContext>();
walletFeature.command('wallet', ownerOnly, wallet);
walletFeature.command('topup', ownerOnly, topup);
walletFeature.on('pre_checkout_query', preCheckout);
walletFeature.on('message:successful_payment', paid);

async function wallet(c: BotContext) {
  const person = personOf(c);
  const read = await actOnce(c, 'wallet', (tx) =>
    walletOverview(tx, c.app.clock, person.customerId, person.mode),
  );
  if (!read) return;
  const entries = read.entries.map((e) =>
    labelled([
      ['at', isoUtc(new Date(e.at))],
      ['kind', e.kind],
      ['amount_usd', usdText(Number(e.amount))],
    ]),
  );
  const pending = read.pending.map((p) =>
    labelled([
      ['topup_request', p.id],
      ['amount_usd', usdText(p.usdMicros)],
      ['created_at', isoUtc(p.createdAt)],
    ]),
  );
  await c.reply(
    inMode(
      person.mode,
      labelled([['balance_usd', usdText(read.balanceMicros)]]),
      entries.length ? `last entries:\n${entries.join('\n\n')}` : 'last entries: none',
      person.mode === 'live'
        ? pending.length
          ? `pending top-ups:\n${pending.join('\n\n')}`
          : 'pending top-ups: none'
        : '',
    ),
  );
}

async function topup(c: BotContext & { match: string }) {
  const person = personOf(c);
  const micros = parseTopupUsd(c.match);
  if (micros === null) {
    if ((await actOnce(c, 'topup', async () => true)) !== null)
      await c.reply(badInput('the amount must be 1 to 10000 USD with at most 2 decimals', '/topup 25.50'));
    return;
  }
  const actor = telegramActor(person.telegramUserId, c.requestId);
  if (person.mode === 'test') {
    const balance = await actOnce(c, 'topup', (tx) =>
      creditTestTopup(tx, c.app.clock, actor, { customerId: person.customerId, usdMicros: micros }),
    );
    if (balance === null) return;
    await c.reply(inMode('test', 'Test wallet topped up.', labelled([['balance_usd', usdText(balance)]])));
    return;
  }
  const request = await actOnce(c, 'topup', (tx) =>
    createTopupRequest(tx, c.app.clock, {
      customerId: person.customerId,
      usdMicros: micros,
      botUserId: person.id,
      telegramUserId: person.telegramUserId,
      chatId: c.chat!.id,
    }),
  );
  if (!request) return;
  const { BOT_PAYMENT_PROVIDER_TOKEN: provider, BOT_PAYMENT_CURRENCY: currency } = c.app.config;
  if (provider) {
    await c.api.sendInvoice(
      c.chat!.id,
      'Wallet top-up',
      `Top-up of the live wallet of ${person.customerName} (request ${request.id})`,
      request.id,
      currency,
      [{ label: 'Wallet top-up', amount: invoiceAmount(micros) }],
      // A start parameter makes a forwarded copy of the invoice a link to the bot, not a Pay
      // button: the invoice is paid in the chat it was sent to.
      { provider_token: provider, start_parameter: TOPUP_START_PARAMETER },
    );
    return;
  }
  await c.reply(
    inMode(
      'live',
      `Top-up request ${request.id} made: an operator will approve it (it expires in 7 days).`,
      labelled([['amount_usd', usdText(micros)]]),
    ),
  );
}

/**
 * Telegram asks before charging: yes only when the payer is a linked owner of the request's
 * customer, the request is pending, and the amount and currency are the invoice's.
 */
async function preCheckout(c: BotContext) {
  const q = c.preCheckoutQuery!;
  const verdict = await actOnce(c, 'pre_checkout', async (tx) => ({
    refusal: await preCheckoutRefusal(tx, c.app.clock.now(), {
      payload: q.invoice_payload,
      totalAmount: q.total_amount,
      currency: q.currency,
      expectedCurrency: c.app.config.BOT_PAYMENT_CURRENCY,
      telegramUserId: q.from.id,
    }),
  }));
  if (!verdict) return;
  if (verdict.refusal === null) await c.answerPreCheckoutQuery(true);
  else await c.answerPreCheckoutQuery(false, { error_message: verdict.refusal });
}

/**
 * The payment happened: recorded once per charge id. It credits the wallet only when it matches a
 * pending request of a customer the payer owns; otherwise it is kept unmatched for a refund and
 * the payer gets one line that names nobody else's numbers.
 */
async function paid(c: BotContext) {
  const p = c.message!.successful_payment!;
  const outcome = await actOnce(c, 'payment', (tx) =>
    recordPayment(tx, c.app.clock, telegramActor(c.from!.id, c.requestId), {
      payload: p.invoice_payload,
      totalAmount: p.total_amount,
      currency: p.currency,
      expectedCurrency: c.app.config.BOT_PAYMENT_CURRENCY,
      telegramUserId: c.from!.id,
      chatId: c.chat!.id,
      chargeId: p.telegram_payment_charge_id,
      providerChargeId: p.provider_payment_charge_id ?? null,
    }),
  );
  if (!outcome) return;
  if (outcome.kind === 'unmatched') {
    await c.reply(unmatchedLine(outcome.mismatch));
    return;
  }
  // The payer is a linked owner of this customer (recordPayment checked): their own balance.
  const { request, balanceMicros: balance } = outcome;
  await c.reply(
    inMode(
      request.mode,
      `Payment received: top-up ${request.id} credited.`,
      labelled([
        ['amount_usd', usdText(request.usdMicros)],
        ['balance_usd', usdText(balance)],
      ]),
    ),
  );
}
