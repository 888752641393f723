// The Bot API methods the stand-in answers, each checking its parameters as Telegram does and
// answering with Telegram's shapes and error texts, so a bot that works here trips on nothing
// new against Telegram. Keys are lowercase: Telegram's method names are case-insensitive.
// Here are the methods on messages, files, queries and payments; the command-menu methods are in
// command-methods.ts, those for how updates reach the bot in update-methods.ts.
import { ApiError } from './api-error.ts';
import { deleteMyCommands, getMyCommands, setMyCommands } from './command-methods.ts';
import type { Params } from './params.ts';
import { type Json, type StoredMessage, toTelegram } from './telegram-objects.ts';
import { deleteWebhook, getUpdates, getWebhookInfo, setWebhook } from './update-methods.ts';
import type { World } from './world.ts';

export type Method = (w: World, p: Params, signal: AbortSignal) => unknown;

const now = () => Math.floor(Date.now() / 1000);
/** Telegram refuses getFile above this size (bots download up to 20 MB). */
const MAX_DOWNLOAD_BYTES = 20 * 1024 * 1024;
const MAX_TEXT = 4096;
const CHAT_ACTIONS = new Set([
  'typing',
  'upload_photo',
  'record_video',
  'upload_video',
  'record_voice',
  'upload_voice',
  'upload_document',
  'choose_sticker',
  'find_location',
  'record_video_note',
  'upload_video_note',
]);

function chatId(w: World, p: Params): number {
  const id = p.int('chat_id', 'required')!;
  w.chat(id);
  return id;
}

function text(p: Params): string {
  const t = p.str('text');
  if (t === undefined || t.trim() === '') throw new ApiError(400, 'Bad Request: message text is empty');
  if (t.length > MAX_TEXT) throw new ApiError(400, 'Bad Request: message is too long');
  return t;
}

/** reply_markup, checked where a mistake would be refused by Telegram (inline keyboards). */
function replyMarkup(p: Params): unknown {
  const m = p.json('reply_markup');
  if (m === undefined) return undefined;
  if (typeof m !== 'object' || m === null || Array.isArray(m))
    throw new ApiError(400, "Bad Request: can't parse reply keyboard markup JSON object");
  const rows = (m as Json).inline_keyboard;
  if (rows === undefined) return m;
  if (!Array.isArray(rows) || rows.some((r) => !Array.isArray(r)))
    throw new ApiError(
      400,
      'Bad Request: field "inline_keyboard" of the InlineKeyboardMarkup must be an Array of Arrays',
    );
  for (const button of rows.flat() as Json[]) {
    if (typeof button?.text !== 'string' || button.text === '')
      throw new ApiError(400, 'Bad Request: text buttons are unallowed in the inline keyboard');
    const data = button.callback_data;
    if (data !== undefined && (typeof data !== 'string' || !data || Buffer.byteLength(data) > 64))
      throw new ApiError(400, 'Bad Request: BUTTON_DATA_INVALID');
    if (data === undefined && !['url', 'pay', 'login_url', 'web_app', 'copy_text'].some((k) => k in button))
      throw new ApiError(400, 'Bad Request: text buttons are unallowed in the inline keyboard');
  }
  return m;
}

/** The bot's own message named by chat_id and message_id (inline messages are not simulated). */
function ownMessage(w: World, p: Params, missing: string): StoredMessage {
  if (p.has('inline_message_id'))
    throw new ApiError(400, 'Bad Request: inline messages are not supported by the stand-in');
  const m = w.findMessage(chatId(w, p), p.int('message_id', 'required')!);
  if (!m) throw new ApiError(400, `Bad Request: ${missing}`);
  if (!m.from_bot) throw new ApiError(400, "Bad Request: message can't be edited");
  return m;
}

function sameMarkup(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? null) === JSON.stringify(b ?? null);
}

function notModified(): ApiError {
  return new ApiError(
    400,
    'Bad Request: message is not modified: specified new message content and reply markup are exactly the same as a current content and reply markup of the message',
  );
}

function sendMessage(w: World, p: Params): Json {
  const id = chatId(w, p);
  const body = text(p);
  const markup = replyMarkup(p);
  const parseMode = p.str('parse_mode');
  w.pacing.countSend(id);
  const m = w.addMessage(id, w.botUser, {
    text: body,
    ...(markup ? { reply_markup: markup } : {}),
    ...(parseMode ? { parse_mode: parseMode } : {}),
  });
  return toTelegram(m);
}

function editMessageText(w: World, p: Params): Json {
  const m = ownMessage(w, p, 'message to edit not found');
  if (m.text === undefined) throw new ApiError(400, 'Bad Request: there is no text in the message to edit');
  const body = text(p);
  // Telegram drops an inline keyboard that an edit of the text does not send again.
  const markup = replyMarkup(p);
  if (body === m.text && sameMarkup(markup, m.reply_markup)) throw notModified();
  m.edits.push(m.text);
  m.text = body;
  m.reply_markup = markup;
  const parseMode = p.str('parse_mode');
  if (parseMode) m.parse_mode = parseMode;
  else delete m.parse_mode;
  m.edit_date = now();
  w.emit({ type: 'edited', message: m });
  return toTelegram(m);
}

function editMessageReplyMarkup(w: World, p: Params): Json {
  const m = ownMessage(w, p, 'message to edit not found');
  const markup = replyMarkup(p);
  if (sameMarkup(markup, m.reply_markup)) throw notModified();
  m.reply_markup = markup;
  m.edit_date = now();
  w.emit({ type: 'edited', message: m });
  return toTelegram(m);
}

function deleteOne(w: World, chat: number, messageId: number): boolean {
  const m = w.findMessage(chat, messageId);
  if (!m) return false;
  // In a private chat a bot may delete the person's messages too; in groups only its own
  // (the stand-in's bot is never an administrator).
  if (!m.from_bot && (w.chat(chat) as { type?: string }).type !== 'private')
    throw new ApiError(400, "Bad Request: message can't be deleted");
  m.deleted = true;
  m.deleted_at = Date.now();
  w.emit({ type: 'deleted', message: m });
  return true;
}

function deleteMessage(w: World, p: Params): true {
  if (!deleteOne(w, chatId(w, p), p.int('message_id', 'required')!))
    throw new ApiError(400, 'Bad Request: message to delete not found');
  return true;
}

function deleteMessages(w: World, p: Params): true {
  const chat = chatId(w, p);
  const ids = p.json('message_ids');
  if (!Array.isArray(ids) || ids.length === 0 || ids.length > 100)
    throw new ApiError(400, 'Bad Request: message_ids must be a non-empty array of at most 100 ids');
  let any = false;
  for (const id of ids) any = deleteOne(w, chat, Number(id)) || any;
  if (!any) throw new ApiError(400, 'Bad Request: message to delete not found');
  return true;
}

function answerCallbackQuery(w: World, p: Params): true {
  const query = w.callbackQueries.get(p.str('callback_query_id', 'required')!);
  if (!query || query.answered)
    throw new ApiError(
      400,
      'Bad Request: query is too old and response timeout expired or query ID is invalid',
    );
  query.answered = true;
  const notice = p.str('text');
  if (notice) w.emit({ type: 'callback_answer', text: notice, showAlert: p.bool('show_alert') });
  return true;
}

function getFile(w: World, p: Params): Json {
  const file = w.files.get(p.str('file_id', 'required')!);
  if (!file) throw new ApiError(400, 'Bad Request: invalid file_id');
  if (file.content.length > MAX_DOWNLOAD_BYTES) throw new ApiError(400, 'Bad Request: file is too big');
  return {
    file_id: file.file_id,
    file_unique_id: file.file_unique_id,
    file_size: file.content.length,
    file_path: file.file_path,
  };
}

/** sendDocument from the bot: an uploaded file (multipart) or the file_id of a known one. */
function sendDocument(w: World, p: Params): Json {
  const id = chatId(w, p);
  const upload = p.file('document');
  const known = upload ? undefined : w.files.get(p.str('document', 'required')!);
  if (!upload && !known) throw new ApiError(400, 'Bad Request: wrong file identifier/HTTP URL specified');
  const file = upload ? w.addFile(upload.filename, upload.data, upload.contentType) : known!;
  const caption = p.str('caption');
  const markup = replyMarkup(p);
  w.pacing.countSend(id);
  const m = w.addMessage(id, w.botUser, {
    ...(caption ? { caption } : {}),
    ...(markup ? { reply_markup: markup } : {}),
    extra: {
      document: {
        file_name: file.file_name,
        mime_type: file.mime_type,
        file_id: file.file_id,
        file_unique_id: file.file_unique_id,
        file_size: file.content.length,
      },
    },
  });
  return toTelegram(m);
}

function prices(p: Params): number {
  const list = p.json('prices');
  if (!Array.isArray(list) || list.length === 0)
    throw new ApiError(400, 'Bad Request: prices must be a non-empty array of LabeledPrice');
  let total = 0;
  for (const price of list as Json[]) {
    if (typeof price?.label !== 'string' || !Number.isInteger(price.amount))
      throw new ApiError(400, 'Bad Request: a LabeledPrice needs a label and an integer amount');
    total += price.amount as number;
  }
  if (total <= 0) throw new ApiError(400, 'Bad Request: CURRENCY_TOTAL_AMOUNT_INVALID');
  return total;
}

function sendInvoice(w: World, p: Params): Json {
  const id = chatId(w, p);
  const title = p.str('title', 'required')!;
  const description = p.str('description', 'required')!;
  const payload = p.str('payload', 'required')!;
  const currency = p.str('currency', 'required')!;
  const providerToken = p.str('provider_token') ?? '';
  if (title.length > 32) throw new ApiError(400, 'Bad Request: TITLE_INVALID');
  if (description.length > 255) throw new ApiError(400, 'Bad Request: DESCRIPTION_INVALID');
  if (Buffer.byteLength(payload) > 128) throw new ApiError(400, 'Bad Request: INVOICE_PAYLOAD_INVALID');
  if (!/^[A-Z]{3}$/.test(currency)) throw new ApiError(400, 'Bad Request: CURRENCY_INVALID');
  // Payments in Telegram Stars (XTR) take no provider; every other currency needs one.
  if (currency !== 'XTR' && !providerToken) throw new ApiError(400, 'Bad Request: PAYMENT_PROVIDER_INVALID');
  const total = prices(p);
  const markup = replyMarkup(p);
  w.pacing.countSend(id);
  const m = w.addMessage(id, w.botUser, {
    invoice: { title, payload, currency, total_amount: total, provider_token: providerToken },
    ...(markup ? { reply_markup: markup } : {}),
    extra: {
      invoice: {
        title,
        description,
        start_parameter: p.str('start_parameter') ?? '',
        currency,
        total_amount: total,
      },
    },
  });
  return toTelegram(m);
}

function answerPreCheckoutQuery(w: World, p: Params): true {
  const id = p.str('pre_checkout_query_id', 'required')!;
  const waiting = w.preCheckouts.get(id);
  if (!waiting) throw new ApiError(400, 'Bad Request: QUERY_ID_INVALID');
  const ok = p.bool('ok');
  const errorMessage = p.str('error_message');
  if (!ok && !errorMessage) throw new ApiError(400, 'Bad Request: ERROR_MESSAGE_EMPTY');
  w.preCheckouts.delete(id);
  waiting(ok ? { ok } : { ok, errorMessage: errorMessage! });
  return true;
}

function sendChatAction(w: World, p: Params): true {
  chatId(w, p);
  if (!CHAT_ACTIONS.has(p.str('action', 'required')!))
    throw new ApiError(400, 'Bad Request: wrong parameter action in request');
  return true;
}

export const METHODS: Record<string, Method> = {
  getme: (w) => ({
    ...w.botUser,
    can_join_groups: true,
    can_read_all_group_messages: false,
    supports_inline_queries: false,
  }),
  getupdates: getUpdates,
  setwebhook: setWebhook,
  deletewebhook: deleteWebhook,
  getwebhookinfo: getWebhookInfo,
  sendmessage: sendMessage,
  editmessagetext: editMessageText,
  editmessagereplymarkup: editMessageReplyMarkup,
  deletemessage: deleteMessage,
  deletemessages: deleteMessages,
  answercallbackquery: answerCallbackQuery,
  getfile: getFile,
  senddocument: sendDocument,
  sendinvoice: sendInvoice,
  answerprecheckoutquery: answerPreCheckoutQuery,
  setmycommands: setMyCommands,
  getmycommands: getMyCommands,
  deletemycommands: deleteMyCommands,
  sendchataction: sendChatAction,
};
