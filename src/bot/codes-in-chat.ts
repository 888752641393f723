// One rule for codes a person sends: every message that may hold codes is deleted from the chat
// once it has been read, whatever came of it (acted on, refused, limited, failed), because a code
// is bearer value and a chat's history is read by whoever holds the phone. What may hold codes:
//   - /addstock or /check with anything after it, /redeem with codes (not `uc=` or `packs=`
//     alone), and any command the bot does not know with words after it (/ADDSTOCK, /addstok);
//   - any document (a .txt/.csv of codes, with or without its /addstock caption);
//   - any other text with a word that looks like a code: 6 to 64 letters, digits or dashes with a
//     digit or a dash in it, or all capitals (a player id is digits only, and is kept).
import type { Api } from 'grammy';
import type { Message, Update } from 'grammy/types';

/** Commands whose words are never codes (a /start token is single use and spent at once). */
const NO_CODES = new Set([
  'start',
  'help',
  'mode',
  'account',
  'stock',
  'wallet',
  'topup',
  'alerts',
  'cancel',
]);
const CODE_LIKE = /^[A-Za-z0-9-]{6,64}$/;
const looksLikeCode = (word: string) =>
  CODE_LIKE.test(word) && !/^\d+$/.test(word) && (/[\d-]/.test(word) || /^[A-Z]+$/.test(word));

/** Whether a message a person sent may hold codes (the rule above). */
export function holdsCodes(message: Message | undefined): boolean {
  if (!message || message.successful_payment) return false;
  if (message.document) return true;
  const text = message.text ?? message.caption ?? '';
  const words = text.split(/[\s,;]+/).filter(Boolean);
  const command = /^\/([A-Za-z_]+)(@\w+)?$/.exec(words[0] ?? '')?.[1]?.toLowerCase();
  if (command === undefined) return words.some(looksLikeCode);
  if (NO_CODES.has(command)) return false;
  if (command === 'redeem')
    return words.slice(2).some((w) => !/^(uc|packs)=/i.test(w) && !/^\w+x\d+$/i.test(w));
  // /addstock, /check, and any command the bot does not know (/ADDSTOCK, /addstok …) with words after it.
  return words.length > 1;
}

/** Deletes the update's message when it may hold codes; a failure is logged, never thrown. */
export async function deleteIfHoldsCodes(
  api: Api,
  update: Update,
  warn: (errName: string | undefined) => void,
): Promise<void> {
  const m = update.message;
  if (m?.chat.type !== 'private' || !holdsCodes(m)) return;
  await api.deleteMessage(m.chat.id, m.message_id).catch((err: unknown) => warn((err as Error)?.name));
}
