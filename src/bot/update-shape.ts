// Whether a webhook body has the shape of a Telegram update where the bot reads it. Telegram
// sends well-formed updates; a body that merely carries the secret header (a misconfigured proxy,
// a test, a leaked secret) may not, and the bot's door reads `message.chat.type` and `from.id`
// before any command runs: a `"message": 5` or a message without its chat would be a TypeError,
// a 500. Such a body is the caller's error: 400 bad_request, nothing acted on.
//
// Checked: each kind of update the bot serves or names (message, edits, channel posts, callback
// query, pre-checkout query, membership) is an object; a message has its chat (an integer id and
// a type), and its sender, text, caption and entities are of their types when present; a callback
// query and a pre-checkout query have their sender; a callback query's message is a message.

const isObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);
const isOptional = (v: unknown, check: (x: unknown) => boolean) => v === undefined || check(v);
const isString = (v: unknown) => typeof v === 'string';

function isUser(v: unknown): boolean {
  return isObject(v) && Number.isSafeInteger(v.id) && isOptional(v.is_bot, (b) => typeof b === 'boolean');
}

function isMessage(v: unknown): boolean {
  if (!isObject(v)) return false;
  const chat = v.chat;
  return (
    isObject(chat) &&
    Number.isSafeInteger(chat.id) &&
    isString(chat.type) &&
    isOptional(v.from, isUser) &&
    isOptional(v.text, isString) &&
    isOptional(v.caption, isString) &&
    isOptional(v.entities, (e) => Array.isArray(e) && e.every(isObject)) &&
    isOptional(v.successful_payment, isObject)
  );
}

const MESSAGES = ['message', 'edited_message', 'channel_post', 'edited_channel_post'];
const OTHERS = ['my_chat_member', 'chat_member'];

/** Whether `update` (already known to be an object with an integer update_id) can be acted on. */
export function isUpdateShape(update: Record<string, unknown>): boolean {
  for (const kind of MESSAGES) if (!isOptional(update[kind], isMessage)) return false;
  for (const kind of OTHERS) if (!isOptional(update[kind], isObject)) return false;
  const query = update.callback_query;
  if (
    query !== undefined &&
    !(
      isObject(query) &&
      isUser(query.from) &&
      isOptional(query.message, isMessage) &&
      isOptional(query.data, isString)
    )
  )
    return false;
  const checkout = update.pre_checkout_query;
  return checkout === undefined || (isObject(checkout) && isUser(checkout.from));
}
