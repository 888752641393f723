// /redeem (contract 14.4): the manual redeem. The request is validated as POST /v1/redeem is
// (the same parser, the same order, then the stock it needs), shown with two buttons, and run by
// the first press of Redeem as a job of channel `bot` (core/bot/redeems.ts). The progress loop
// (bot/progress.ts) edits the message as codes finish and writes the end.
import type { Bot } from 'grammy';
import { InlineKeyboard } from 'grammy';
import { loadAccountState, today } from '../../core/accounts/accounts.ts';
import {
  botRedeemRefusal,
  createConfirmation,
  pressConfirmation,
  type RedeemSummary,
  setConfirmationMessage,
} from '../../core/bot/redeems.ts';
import { ApiError } from '../../core/errors.ts';
import { parseRedeemRequest, type RedeemRequest } from '../../core/redeem/request.ts';
import { categoryUc } from '../../core/stock/catalog.ts';
import { chooseForUc } from '../../core/stock/chooser.ts';
import { availableCounts } from '../../core/stock/stock.ts';
import { actOnce, type BotContext, personOf } from '../context.ts';
import { inMode, labelled } from '../replies.ts';

const EXAMPLE =
  '/redeem 5123456789 CODE1 CODE2, /redeem 5123456789 uc=720 or /redeem 5123456789 packs=660x1,60x1';

/** The chat's words as the API's body: codes, `uc=<n>` or `packs=<cat>x<n>,…` after the player. */
export function redeemBody(args: string): Record<string, unknown> {
  const [player, ...rest] = args
    .trim()
    .split(/[\s,]+/)
    .filter(Boolean);
  const body: Record<string, unknown> = {};
  if (player !== undefined) body.player_id = player;
  const first = rest[0] ?? '';
  if (/^uc=/i.test(first)) {
    const n = first.slice(3);
    body.uc = /^\d{1,30}$/.test(n) ? Number(n) : n;
    if (rest.length > 1) body.codes = rest.slice(1);
  } else if (/^packs=/i.test(first)) {
    const packs: Record<string, unknown> = {};
    for (const part of [first.slice(6), ...rest.slice(1)].join(',').split(',').filter(Boolean)) {
      const m = /^(\w+)x(\d{1,9})$/i.exec(part);
      if (!m) throw new ApiError('bad_packs', `"${part.slice(0, 20)}" is not <category>x<count>`);
      packs[m[1]!] = Number(m[2]);
    }
    body.packs = packs;
  } else if (rest.length > 0) {
    body.codes = rest;
  }
  return body;
}

/** What the confirmation shows, with the stock check of step 11 (no_stock) before anything is reserved. */
async function summaryOf(c: BotContext, req: RedeemRequest): Promise<RedeemSummary> {
  if (req.source === 'codes')
    return { player_id: req.playerId, codes: req.codes.length, source: 'codes', uc: null, packs: null };
  const person = personOf(c);
  const available = await availableCounts(c.app.db, person.customerId, person.mode);
  const picks = 'packs' in req ? req.packs : chooseForUc(req.uc, available);
  if (!picks || picks.some((p) => (available[p.category] ?? 0) < p.count))
    throw new ApiError('no_stock', 'not enough stock for this request; add codes with /addstock');
  return {
    player_id: req.playerId,
    codes: picks.reduce((n, p) => n + p.count, 0),
    source: 'stock',
    uc: picks.reduce((n, p) => n + p.count * categoryUc(p.category), 0),
    packs: picks.map((p) => ({ category: p.category, count: p.count })),
  };
}

export function summaryLines(s: RedeemSummary): string {
  const pairs: [string, string | number][] = [
    ['player_id', s.player_id],
    ['codes', s.codes],
    ['source', s.source],
  ];
  if (s.uc !== null) pairs.push(['uc', s.uc]);
  return labelled(pairs);
}

export function registerRedeem(bot: Bot<BotContext>) {
  bot.command('redeem', askRedeem);
  bot.callbackQuery(/^br:(br_[A-Za-z0-9]{1,40}):([rc])$/, (c) => pressed(c, c.match[1]!, c.match[2] === 'r'));
  // Any other button (an old keyboard, a forged payload): answered, nothing done.
  bot.on('callback_query:data', async (c) => {
    if ((await actOnce(c, 'callback', async () => true)) !== null)
      await c.answerCallbackQuery({ text: 'This button does nothing any more.' });
  });
}

/** `/redeem …`: validated, then shown with Redeem and Cancel; nothing is reserved yet. */
async function askRedeem(c: BotContext & { match: string }) {
  const person = personOf(c);
  const refuse = async (line: string) => {
    if ((await actOnce(c, 'redeem', async () => true)) !== null) await c.reply(line);
  };
  let req: RedeemRequest;
  let summary: RedeemSummary;
  try {
    req = parseRedeemRequest(redeemBody(c.match));
    const refusal = botRedeemRefusal(
      await loadAccountState(c.app.db, person.customerId, person.mode, today(c.app.clock)),
      c.app.clock.now(),
    );
    if (refusal) return refuse(refusal);
    summary = await summaryOf(c, req);
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    return refuse(`${err.code}: ${err.message}. Example: ${EXAMPLE}`);
  }
  const caller = {
    botUserId: person.id,
    customerId: person.customerId,
    mode: person.mode,
    telegramUserId: person.telegramUserId,
    chatId: c.chat!.id,
  };
  const id = await actOnce(c, 'redeem', (tx) =>
    createConfirmation(tx, c.app, caller, { playerId: req.playerId, selection: req, summary }),
  );
  if (!id) return;
  const keyboard = new InlineKeyboard().text('Redeem', `br:${id}:r`).text('Cancel', `br:${id}:c`);
  const sent = await c.reply(
    inMode(person.mode, 'Redeem this? Nothing runs until you press Redeem.', summaryLines(summary)),
    { reply_markup: keyboard },
  );
  await setConfirmationMessage(c.app.db, id, sent.message_id);
}

/** A press of Redeem or Cancel: only the first press of a live confirmation does anything. */
async function pressed(c: BotContext, id: string, redeem: boolean) {
  const person = personOf(c);
  const result = await actOnce(c, 'redeem_press', (tx) =>
    pressConfirmation(tx, c.app, {
      id,
      presser: { botUserId: person.id, telegramUserId: person.telegramUserId, customerId: person.customerId },
      action: redeem ? 'redeem' : 'cancel',
      requestId: c.requestId,
    }),
  );
  if (!result) return;
  // The confirmation's mode, not the person's now (they may have switched since).
  const mode = result.mode ?? person.mode;
  const edit = (text: string) => c.editMessageText(text, { reply_markup: undefined }).catch(() => undefined);
  switch (result.kind) {
    case 'started': {
      c.app.jobs.wake();
      await c.answerCallbackQuery({ text: 'Redeem started' });
      const waiting = result.queued
        ? 'waiting: another bot redeem of this account is running; this one starts after it'
        : '';
      await edit(
        inMode(
          mode,
          `Redeem started (${result.jobId})`,
          summaryLines(result.summary),
          waiting,
          `done: 0/${result.summary.codes}`,
        ),
      );
      return;
    }
    case 'cancelled':
      await c.answerCallbackQuery({ text: 'Cancelled' });
      await edit(inMode(mode, 'Redeem cancelled: nothing was run.'));
      return;
    case 'refused':
      await c.answerCallbackQuery({ text: 'Refused' });
      await edit(inMode(mode, result.line));
      return;
    case 'gone':
      if (result.why === 'void') {
        await c.answerCallbackQuery({ text: 'Void: nothing was run.' });
        await edit(
          inMode(
            mode,
            'This confirmation is void (you were unlinked or linked to another account since): nothing was run.',
          ),
        );
        return;
      }
      if (result.why !== 'expired') {
        await c.answerCallbackQuery({ text: 'This redeem was decided already.' });
        return;
      }
      await c.answerCallbackQuery({ text: 'This confirmation expired (10 minutes): send /redeem again.' });
      await edit(inMode(mode, 'Confirmation expired after 10 minutes: nothing was run. Send /redeem again.'));
  }
}
