// The bot's door: what an update must pass on arrival, before it waits for its chat's turn.
//
// On arrival (admitUpdate), in the order updates arrive, before they wait for their chat's turn:
//   - only private chats (codes are bearer value): groups and channels are ignored, as are
//     edited messages and kinds the bot does not serve;
//   - an update acted on before is dropped (its update_id is in bot_updates);
//   - at most 20 updates per person per 10 s, counted at the moment the update arrived (the
//     batch's receipt, or the webhook delivery), however slowly the replies are paced: the rest
//     are recorded as acted on (a redelivery is not counted twice) and one line asks to slow down,
//     once per window. A payment's pre-checkout and a payment that happened are never limited.
// When its chat's turn comes, the shared guards take over (bot/guards.ts: linked, then a
// command's ownerOnly).
import type { Api } from 'grammy';
import type { Update } from 'grammy/types';
import { claimUpdate, updateSeen } from '../core/bot/updates.ts';
import { takeWindowSlot, type WindowRule } from '../core/limits/window-limit.ts';
import type { ServerContext } from '../http/context.ts';
import { SLOW_DOWN } from './replies.ts';

const PERSON_RULE: WindowRule = { bucket: 'bot:', what: 'bot updates', limit: 20, windowMs: 10_000 };
/** The slow-down line: once per person per window. */
const WARN_RULE: WindowRule = { bucket: 'botwarn:', what: 'slow-down lines', limit: 1, windowMs: 10_000 };

const SERVED = new Set(['message', 'callback_query', 'pre_checkout_query']);

/** The kind of an update, for metrics and the dedupe row (a closed set). */
export function updateKind(update: object): string {
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

/** The chat an update's turn is taken in (a pre-checkout has none: its payer's private chat). */
export function chatKey(u: Update): string | undefined {
  const id =
    u.message?.chat.id ??
    u.callback_query?.message?.chat.id ??
    u.callback_query?.from.id ??
    u.pre_checkout_query?.from.id;
  return id === undefined ? undefined : String(id);
}

/** A payment's pre-checkout or a payment that happened: acted on at once, never limited. */
export const isPayment = (u: Update) =>
  u.pre_checkout_query !== undefined || u.message?.successful_payment !== undefined;

export type Admission = 'ignored' | 'duplicate' | 'limited' | 'admitted';

/**
 * The arrival step: whether the update is served, new and within its person's limit, counted at
 * `receivedAt`. A limited update is recorded as acted on here and its slow-down line sent (not
 * awaited: it waits behind the chat's earlier replies, which are paced).
 */
export async function admitUpdate(
  app: ServerContext,
  api: Api,
  update: Update,
  receivedAt: Date,
): Promise<Admission> {
  const kind = updateKind(update);
  const metrics = app.metrics.bot;
  const from = update.message?.from ?? update.callback_query?.from ?? update.pre_checkout_query?.from;
  const chatType = update.message?.chat.type ?? update.callback_query?.message?.chat.type;
  // pre_checkout_query has no chat; everything else must come from a private chat.
  if (
    !SERVED.has(kind) ||
    (kind !== 'pre_checkout_query' && chatType !== 'private') ||
    !from ||
    from.is_bot
  ) {
    metrics.update(kind, 'ignored');
    return 'ignored';
  }
  if (await updateSeen(app.db, update.update_id)) {
    metrics.update(kind, 'duplicate');
    return 'duplicate';
  }
  if (isPayment(update)) return 'admitted';
  const slot = await takeWindowSlot(app.db, PERSON_RULE, String(from.id), receivedAt);
  if (slot.allowed) return 'admitted';
  metrics.update(kind, 'limited');
  await claimUpdate(app.db, update.update_id, 'limited', app.clock.now());
  const warn = await takeWindowSlot(app.db, WARN_RULE, String(from.id), receivedAt);
  const chatId = chatKey(update);
  if (warn.allowed && chatId !== undefined)
    void api
      .sendMessage(Number(chatId), SLOW_DOWN)
      .catch((err: unknown) =>
        app.logger.warn({ errName: (err as Error)?.name }, 'bot: slow-down line not sent'),
      );
  return 'limited';
}
