// The stand-in's objects in Telegram's shapes: the people, chats and messages it stores (and
// tests read back), and how they become the User, Message and entity objects the bot receives.
import { randomBytes } from 'node:crypto';

export type ChatType = 'private' | 'group' | 'supergroup' | 'channel';
export interface SimUser {
  id: number;
  username?: string;
  first_name?: string;
  /** The language of the person's Telegram app (default `en`): picks commands set per language. */
  language_code?: string;
}
export interface SimChat {
  id: number;
  type: ChatType;
}
export interface SimInvoice {
  title: string;
  payload: string;
  currency: string;
  total_amount: number;
  provider_token: string;
}
/** A message of a chat, as tests see it: live (edits and deletion show on the same object). */
export interface SimMessage {
  message_id: number;
  chat_id: number;
  text?: string;
  caption?: string;
  reply_markup?: unknown;
  /** Earlier texts, oldest first. */
  edits: string[];
  deleted: boolean;
  invoice?: SimInvoice;
  from_bot: boolean;
  /** The parse_mode the bot asked for, when it asked for one. */
  parse_mode?: string;
  /**
   * Date.now() when the stand-in stored the message (a person's send, or the bot's call that
   * made it): tests measure from these how long a person waited for a reply.
   */
  at: number;
  /** Date.now() when the message was deleted, once it was. */
  deleted_at?: number;
}

export type Json = Record<string, unknown>;
export type Update = Json & { update_id: number };

/** A message as stored: the test's view plus what a Telegram Message object needs. */
export interface StoredMessage extends SimMessage {
  from: Json;
  chat: Json;
  date: number;
  edit_date?: number;
  /** Further Telegram fields (document, successful_payment, entities …) sent as they are. */
  extra: Json;
}

export interface StoredFile {
  file_id: string;
  file_unique_id: string;
  file_path: string;
  file_name: string;
  mime_type: string;
  content: Buffer;
}

export type SimEvent =
  | { type: 'message'; message: StoredMessage }
  | { type: 'edited'; message: StoredMessage }
  | { type: 'deleted'; message: StoredMessage }
  | { type: 'callback_answer'; text: string; showAlert: boolean };

export const randomId = (bytes: number) => randomBytes(bytes).toString('base64url');

/** Telegram's Message object for a stored message. */
export function toTelegram(m: StoredMessage): Json {
  return {
    message_id: m.message_id,
    from: m.from,
    chat: m.chat,
    date: m.date,
    ...(m.edit_date ? { edit_date: m.edit_date } : {}),
    ...(m.text !== undefined ? { text: m.text } : {}),
    ...(m.caption !== undefined ? { caption: m.caption } : {}),
    ...m.extra,
    ...(m.reply_markup ? { reply_markup: m.reply_markup } : {}),
  };
}

/**
 * The `bot_command` entities Telegram attaches to a text or caption. grammY's `bot.command()`
 * matches on these, not on the text, so a stand-in without them would match no command at all.
 */
export function commandEntities(text: string): Json[] {
  const out: Json[] = [];
  for (const m of text.matchAll(/(^|\s)(\/[A-Za-z0-9_]{1,32}(?:@[A-Za-z0-9_]{3,32})?)(?=\s|$)/g)) {
    out.push({ type: 'bot_command', offset: (m.index ?? 0) + (m[1]?.length ?? 0), length: m[2]!.length });
  }
  return out;
}

/** The inline buttons of a message, row after row. */
export function buttonsOf(m: SimMessage): { text: string; callback_data?: string; url?: string }[] {
  const rows = (m.reply_markup as { inline_keyboard?: unknown } | undefined)?.inline_keyboard;
  return Array.isArray(rows) ? (rows.flat() as { text: string; callback_data?: string; url?: string }[]) : [];
}

export function userNames(user: SimUser | undefined): Json {
  return {
    first_name: user?.first_name ?? `User ${user?.id ?? ''}`.trim(),
    ...(user?.username ? { username: user.username } : {}),
  };
}

/** Telegram's user object for a simulated person. */
export function telegramUser(user: SimUser): Json {
  return { id: user.id, is_bot: false, ...userNames(user), language_code: user.language_code ?? 'en' };
}

/** The kind of an update: its one field besides update_id (message, callback_query …). */
export const updateKind = (u: Update) => Object.keys(u).find((k) => k !== 'update_id') ?? 'unknown';
