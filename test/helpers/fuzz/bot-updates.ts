// The fuzzer's Telegram updates for POST /bot/updates (Bot API `Update` shapes): messages and
// commands, button presses, edits, membership changes, and odd or malformed updates.
import { chance, pick, type Random } from './random.ts';
import { HOSTILE_STRINGS, sample } from './values.ts';

/** Telegram update shapes (Bot API `Update`): messages, commands, buttons, edits, odd ones. */
export function botUpdate(r: Random, updateId: number): unknown {
  // Mostly people the bot has not met, each in a chat of their own (Telegram allows a chat one
  // message a second); a few odd ids.
  const id = chance(r, 0.9) ? 80_000_000 + Math.floor(r() * 1e8) : pick(r, [1, 2 ** 53]);
  const from = { id, is_bot: false, first_name: 'fuzz' };
  const chat = { id: from.id, type: 'private' };
  const text = chance(r, 0.6)
    ? pick(r, [
        '/start',
        '/help',
        '/balance',
        '/me',
        '/redeem 5123456789 ABCD1234',
        '/link xyz',
        '/stock',
        'hello',
      ])
    : pick(r, HOSTILE_STRINGS);
  const message = { message_id: Math.floor(r() * 1e6), date: 1795000000, chat, from, text };
  const roll = r();
  if (roll < 0.55) return { update_id: updateId, message };
  if (roll < 0.7)
    return {
      update_id: updateId,
      callback_query: {
        id: String(updateId),
        from,
        chat_instance: '1',
        data: pick(r, ['x', 'redeem:1', ...HOSTILE_STRINGS]),
        message,
      },
    };
  if (roll < 0.78) return { update_id: updateId, edited_message: message };
  if (roll < 0.85) return { update_id: updateId, my_chat_member: { chat, from, date: 1795000000 } };
  if (roll < 0.92) return { update_id: pick(r, [updateId, -1, 0, 1.5, '1', null]), message: sample(r, {}) };
  return sample(r, { type: 'object', properties: { update_id: { type: 'integer' } } });
}
