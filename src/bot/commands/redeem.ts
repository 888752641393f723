// /redeem (docs/reference/bot.md#commands): the manual redeem. The request is validated as POST /v1/redeem is
// (the same parser, the same order), then one core call checks the account and the stock it needs
// and records the confirmation (prepareBotRedeem), which is shown with two buttons and run by the
// first press of Redeem as a job of channel `bot` (pressConfirmation, core/bot/redeems.ts). The
// progress loop (bot/progress.ts) edits the message as codes finish and writes the end.
import { Composer, InlineKeyboard } from 'grammy';
import {
  type BotRedeemAsk,
  prepareBotRedeem,
  pressConfirmation,
  setConfirmationMessage,
} from '../../core/bot/redeems.ts';
import { ApiError } from '../../core/errors.ts';
import { parseRedeemRequest } from '../../core/redeem/request.ts';
import { actOnce, type BotContext, personOf } from '../context.ts';
import { inMode, summaryLines } from '../replies.ts';

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

/**
 * /redeem and the buttons of its confirmation (`br:<id>:r` and `br:<id>:c`), nothing else: any
 * other button falls through to the fallback registered last (bot/fallbacks.ts).
 */
export const redeemFeature = new Composer<BotContext>();
redeemFeature.command('redeem', askRedeem);
redeemFeature.callbackQuery(/^br:(br_[A-Za-z0-9]{1,40}):([rc])$/, (c) =>
  pressed(c, c.match[1]!, c.match[2] === 'r'),
);

/** `/redeem …`: validated, then shown with Redeem and Cancel; nothing is reserved yet. */
async function askRedeem(c: BotContext & { match: string }) {
  const person = personOf(c);
  const caller = {
    botUserId: person.id,
    customerId: person.customerId,
    mode: person.mode,
    telegramUserId: person.telegramUserId,
    chatId: c.chat!.id,
  };
  let asked: BotRedeemAsk | null;
  try {
    const req = parseRedeemRequest(redeemBody(c.match));
    asked = await actOnce(c, 'redeem', (tx) => prepareBotRedeem(tx, c.app, caller, req));
  } catch (err) {
    if (!(err instanceof ApiError)) throw err;
    // A bad request, or no stock (its transaction rolled back): the update is recorded with the line.
    if ((await actOnce(c, 'redeem', async () => true)) !== null)
      await c.reply(`${err.code}: ${err.message}. Example: ${EXAMPLE}`);
    return;
  }
  if (!asked) return;
  if (asked.kind === 'refused') {
    await c.reply(asked.line);
    return;
  }
  const keyboard = new InlineKeyboard().text('Redeem', `br:${asked.id}:r`).text('Cancel', `br:${asked.id}:c`);
  const sent = await c.reply(
    inMode(person.mode, 'Redeem this? Nothing runs until you press Redeem.', summaryLines(asked.summary)),
    { reply_markup: keyboard },
  );
  // A step of its own: the message's id is Telegram's answer to the reply, after the commit.
  await setConfirmationMessage(c.app.db, { id: asked.id, customerId: person.customerId }, sent.message_id);
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
