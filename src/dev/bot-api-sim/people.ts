// The people on the other side of the stand-in's chats, as tests and bot-sim play them: they
// write, paste, send files, press buttons and pay, and each action stores its message in its
// chat and queues the update that carries it, as Telegram's apps and servers would.
import { randomInt } from 'node:crypto';
import {
  buttonsOf,
  type ChatType,
  commandEntities,
  randomId,
  type SimChat,
  type SimMessage,
  type SimUser,
  type StoredMessage,
  telegramUser,
  toTelegram,
} from './telegram-objects.ts';
import type { World } from './world.ts';

/** The longest text one Telegram message holds; the apps split a longer paste into several. */
export const MAX_MESSAGE_LENGTH = 4096;

export interface SendOptions {
  /** The chat the message is written in (default: the person's private chat, id = user id). */
  chat?: SimChat;
  /**
   * The message's `date` in Unix seconds (default: now by the machine's clock). A test on a
   * manual clock sets it from that clock, since the bot counts a message when it was sent.
   */
  date?: number;
}

/** What the simulated people do. */
export interface People {
  sendText(from: SimUser, text: string, opts?: SendOptions): Promise<{ updateId: number; messageId: number }>;
  /**
   * Many messages from one person at once, as a person pasting or typing fast: all are queued
   * together, so a waiting getUpdates gets them in one batch (the next one, when none waits) and
   * a webhook gets them back to back. Each `date` is the send time (or opts.date); texts may
   * hold newlines. Returns the ids in the order sent.
   */
  burst(
    from: SimUser,
    texts: string[],
    opts?: SendOptions,
  ): Promise<{ updateIds: number[]; messageIds: number[] }>;
  sendDocument(
    from: SimUser,
    doc: { fileName: string; content: Buffer | string; caption?: string; mimeType?: string },
    opts?: SendOptions,
  ): Promise<{ updateId: number; messageId: number }>;
  /**
   * A callback_query for a button of a bot message. Throws when the message is not the bot's,
   * is deleted, or shows no button with that data, unless `stale` (a button pressed on a second
   * device or twice, after the bot removed it).
   */
  press(
    from: SimUser,
    message: SimMessage,
    callbackData: string,
    opts?: { stale?: boolean },
  ): Promise<{ updateId: number; callbackQueryId: string }>;
  /** Any raw update; numbered unless it has an update_id; a `message` without id gets the chat's next. */
  pushUpdate(update: Record<string, unknown>): number;
  /** Queues the very same update again (Telegram redelivers after a restart or a failed webhook). */
  redeliver(updateId: number): void;
  /**
   * Pays an invoice: a pre_checkout_query, then (when the bot answers ok) a message with
   * successful_payment. `totalAmount`/`currency` default to the invoice's (a mismatch tests refusal).
   */
  pay(
    from: SimUser,
    invoice: SimMessage,
    opts?: { totalAmount?: number; currency?: string; chargeId?: string },
  ): Promise<{ accepted: boolean; errorMessage?: string; chargeId?: string }>;
}

const MIME_BY_EXT: Record<string, string> = { txt: 'text/plain', csv: 'text/csv', json: 'application/json' };

/** Stores a person's message and answers the update that carries it (not yet queued). */
function write(world: World, from: SimUser, chat: SimChat, fields: Partial<StoredMessage>, date?: number) {
  world.openChat(chat, from);
  const m = world.addMessage(chat.id, telegramUser(from), { ...fields, ...(date ? { date } : {}) });
  return { m, update: { [chat.type === 'channel' ? 'channel_post' : 'message']: toTelegram(m) } };
}

const chatOf = (from: SimUser, opts?: SendOptions): SimChat => opts?.chat ?? { id: from.id, type: 'private' };

/** A text message's fields, refused as the Telegram apps would never send it. */
function textFields(method: string, text: string): Partial<StoredMessage> {
  if (text.trim() === '') throw new Error(`${method}: Telegram has no empty messages`);
  if (text.length > MAX_MESSAGE_LENGTH)
    throw new Error(
      `${method}: ${text.length} characters; Telegram's apps split text over ${MAX_MESSAGE_LENGTH}`,
    );
  const entities = commandEntities(text);
  return { text, extra: entities.length ? { entities } : {} };
}

/** What the simulated people do: each action stores its message and queues its update. */
export function createPeople(world: World, preCheckoutTimeoutMs: number): People {
  let querySeq = 0;
  // Telegram's query ids are long decimal strings; a random head keeps two stand-ins' apart.
  const queryHead = randomInt(1_000_000_000, 9_999_999_999);
  const nextQueryId = () => `${queryHead}${String(++querySeq).padStart(9, '0')}`;

  function post(from: SimUser, chat: SimChat, fields: Partial<StoredMessage>, date?: number) {
    const { m, update } = write(world, from, chat, fields, date);
    return Promise.resolve({ updateId: world.updates.push(update), messageId: m.message_id });
  }

  return {
    async sendText(from, text, opts) {
      return post(from, chatOf(from, opts), textFields('sendText', text), opts?.date);
    },
    async burst(from, texts, opts) {
      const fields = texts.map((t) => textFields('burst', t));
      const written = fields.map((f) => write(world, from, chatOf(from, opts), f, opts?.date));
      const updateIds = world.updates.pushMany(written.map((w) => w.update));
      return { updateIds, messageIds: written.map((w) => w.m.message_id) };
    },
    async sendDocument(from, doc, opts) {
      const content = typeof doc.content === 'string' ? Buffer.from(doc.content) : doc.content;
      const ext = /\.([A-Za-z0-9]+)$/.exec(doc.fileName)?.[1]?.toLowerCase() ?? '';
      const file = world.addFile(
        doc.fileName,
        content,
        doc.mimeType ?? MIME_BY_EXT[ext] ?? 'application/octet-stream',
      );
      const entities = doc.caption ? commandEntities(doc.caption) : [];
      const document = {
        file_name: file.file_name,
        mime_type: file.mime_type,
        file_id: file.file_id,
        file_unique_id: file.file_unique_id,
        file_size: content.length,
      };
      return post(from, chatOf(from, opts), {
        ...(doc.caption ? { caption: doc.caption } : {}),
        extra: { document, ...(entities.length ? { caption_entities: entities } : {}) },
      });
    },
    async press(from, message, callbackData, opts) {
      const m = pressable(world, message, callbackData, opts?.stale ?? false);
      const id = nextQueryId();
      world.callbackQueries.set(id, { answered: false });
      const updateId = world.updates.push({
        callback_query: {
          id,
          from: telegramUser(from),
          message: toTelegram(m),
          chat_instance: String(m.chat_id * 7919),
          data: callbackData,
        },
      });
      return { updateId, callbackQueryId: id };
    },
    pushUpdate: (update) => world.updates.push(recordRaw(world, update)),
    redeliver: (updateId) => world.updates.redeliver(updateId),
    async pay(from, invoice, opts = {}) {
      const stored = world.findMessage(invoice.chat_id, invoice.message_id);
      if (!stored?.invoice) throw new Error(`pay: message ${invoice.message_id} is not a live invoice`);
      const currency = opts.currency ?? stored.invoice.currency;
      const total = opts.totalAmount ?? stored.invoice.total_amount;
      const id = nextQueryId();
      const answered = new Promise<{ ok: boolean; errorMessage?: string }>((resolve) => {
        world.preCheckouts.set(id, resolve);
      });
      world.updates.push({
        pre_checkout_query: {
          id,
          from: telegramUser(from),
          currency,
          total_amount: total,
          invoice_payload: stored.invoice.payload,
        },
      });
      let timer: NodeJS.Timeout | undefined;
      const timedOut = new Promise<{ ok: boolean; errorMessage: string }>((resolve) => {
        timer = setTimeout(() => {
          world.preCheckouts.delete(id);
          resolve({ ok: false, errorMessage: `no answerPreCheckoutQuery within ${preCheckoutTimeoutMs} ms` });
        }, preCheckoutTimeoutMs);
      });
      const answer = await Promise.race([answered, timedOut]);
      clearTimeout(timer);
      if (!answer.ok) return { accepted: false, errorMessage: answer.errorMessage ?? '' };
      const chargeId = opts.chargeId ?? `sim_charge_${randomId(12)}`;
      const successful_payment = {
        currency,
        total_amount: total,
        invoice_payload: stored.invoice.payload,
        telegram_payment_charge_id: chargeId,
        provider_payment_charge_id: `sim_provider_${randomId(12)}`,
      };
      await post(from, { id: stored.chat_id, type: 'private' }, { extra: { successful_payment } });
      return { accepted: true, chargeId };
    },
  };
}

/** The stored bot message a press is for, checked so a test's typo fails loudly. */
function pressable(world: World, message: SimMessage, data: string, stale: boolean): StoredMessage {
  const m = world.findMessage(message.chat_id, message.message_id);
  if (!m?.from_bot)
    throw new Error(
      `press: message ${message.message_id} of chat ${message.chat_id} is not a live bot message`,
    );
  const buttons = buttonsOf(m);
  if (!stale && !buttons.some((b) => b.callback_data === data))
    throw new Error(
      `press: message ${m.message_id} has no button "${data}" (it has: ${buttons.map((b) => JSON.stringify(b.callback_data ?? b.text)).join(', ') || 'none'})`,
    );
  return m;
}

/**
 * A raw update's message recorded in its chat, so messages() shows it and the bot may edit or
 * delete it: a new `message`/`channel_post` gets the chat's next id and a date when it has none;
 * an `edited_message` changes the stored text (keeping the old one in `edits`).
 */
function recordRaw(world: World, update: Record<string, unknown>): Record<string, unknown> {
  const key = ['message', 'channel_post', 'edited_message'].find((k) => typeof update[k] === 'object');
  const msg = key ? (update[key] as Record<string, unknown>) : undefined;
  const chat = msg?.chat as { id?: unknown; type?: unknown } | undefined;
  if (!key || !msg || typeof chat?.id !== 'number') return update;
  const chatId = chat.id;
  const from = (msg.from ?? {}) as SimUser & Record<string, unknown>;
  world.openChat({ id: chatId, type: (chat.type as ChatType | undefined) ?? 'private' }, from);
  const known = typeof msg.message_id === 'number' ? world.findMessage(chatId, msg.message_id) : undefined;
  if (key === 'edited_message' || known) {
    if (known && typeof msg.text === 'string' && msg.text !== known.text) {
      if (known.text !== undefined) known.edits.push(known.text);
      known.text = msg.text;
    }
    return update;
  }
  const { message_id, from: _f, chat: _c, date: _d, text, caption, reply_markup: _r, ...extra } = msg;
  const m = world.addMessage(chatId, from, {
    ...(typeof message_id === 'number' ? { message_id } : {}),
    ...(typeof text === 'string' ? { text } : {}),
    ...(typeof caption === 'string' ? { caption } : {}),
    extra,
  });
  return { ...update, [key]: { ...msg, message_id: m.message_id, date: msg.date ?? m.date } };
}
