// The bot's door (contract 14.2, 14.7): what an update must pass before any command sees it.
//   - only private chats (codes are bearer value): groups and channels are ignored, as are
//     edited messages and kinds the bot does not serve;
//   - an update acted on before is dropped (its update_id is in bot_updates);
//   - at most 20 updates per person per 10 s (one line asks to slow down, once per window);
//   - the person must be linked to a customer that is not disabled, except for `/start <token>`.
import type { NextFunction } from 'grammy';
import { touchBotUser } from '../core/bot/links.ts';
import { updateSeen } from '../core/bot/updates.ts';
import { newRequestId } from '../core/ids.ts';
import { takeWindowSlot, type WindowRule } from '../core/limits/window-limit.ts';
import type { ServerContext } from '../http/context.ts';
import { actOnce, type BotContext } from './context.ts';
import { NOT_LINKED, SLOW_DOWN } from './replies.ts';

const PERSON_RULE: WindowRule = { bucket: 'bot:', what: 'bot updates', limit: 20, windowMs: 10_000 };
/** The slow-down line: once per person per window. */
const WARN_RULE: WindowRule = { bucket: 'botwarn:', what: 'slow-down lines', limit: 1, windowMs: 10_000 };

/** The kind of an update, for metrics and the dedupe row (a closed set). */
export function updateKind(update: Record<string, unknown>): string {
  for (const kind of [
    'message',
    'callback_query',
    'pre_checkout_query',
    'edited_message',
    'channel_post',
    'edited_channel_post',
    'my_chat_member',
  ])
    if (kind in update) return kind;
  return 'other';
}

/** The chat type an update happened in, when it has one. */
function chatType(c: BotContext): string | undefined {
  return c.chat?.type;
}

export function gate(app: ServerContext) {
  return async (c: BotContext, next: NextFunction) => {
    c.app = app;
    c.person = null;
    c.requestId = newRequestId();
    const kind = updateKind(c.update as unknown as Record<string, unknown>);
    const metrics = app.metrics.bot;
    const served = kind === 'message' || kind === 'callback_query' || kind === 'pre_checkout_query';
    // pre_checkout_query has no chat; everything else must come from a private chat.
    if (!served || (kind !== 'pre_checkout_query' && chatType(c) !== 'private') || !c.from || c.from.is_bot) {
      metrics.update(kind, 'ignored');
      return;
    }
    if (await updateSeen(app.db, c.update.update_id)) {
      metrics.update(kind, 'duplicate');
      return;
    }
    const now = app.clock.now();
    // A payment's pre-checkout (answered within 10 s) and a payment that happened (money
    // received is always credited) are never limited, and need no link now.
    const payment = kind === 'pre_checkout_query' || c.message?.successful_payment !== undefined;
    if (!payment) {
      const slot = await takeWindowSlot(app.db, PERSON_RULE, String(c.from.id), now);
      if (!slot.allowed) {
        metrics.update(kind, 'limited');
        const warn = await takeWindowSlot(app.db, WARN_RULE, String(c.from.id), now);
        if (warn.allowed) await c.reply(SLOW_DOWN);
        return;
      }
    }
    c.person = await touchBotUser(app.db, c.from.id, now);
    const startWithToken = c.message?.text !== undefined && /^\/start(@\w+)?\s+\S/.test(c.message.text);
    if ((!c.person || c.person.customerDisabled) && !startWithToken && !payment) {
      c.person = null;
      metrics.update(kind, 'acted');
      if (kind === 'callback_query') await c.answerCallbackQuery().catch(() => undefined);
      if ((await actOnce(c, 'unlinked', async () => true)) !== null) await c.reply(NOT_LINKED);
      return;
    }
    metrics.update(kind, 'acted');
    await next();
  };
}
