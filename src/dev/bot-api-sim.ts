// A local stand-in for Telegram's Bot API, for the chat bot's tests and `redeem-gateway bot-sim`:
// a real HTTP server on 127.0.0.1 in Telegram's layout (grammY talks to it through
// BOT_API_ROOT), plus a control object that plays the people on the other side: they write,
// send files, press buttons and pay, and a test reads back every message of every chat.
//
// The pieces: bot-api-sim/world.ts (chats, files, the update queue, long polling, webhooks),
// methods.ts (the Bot API methods), params.ts (bodies off the wire), http.ts (the routes).
import { randomInt } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { type CallRecord, createBotApiServer, type Failure } from './bot-api-sim/http.ts';
import {
  type ChatType,
  type CommandList,
  type CommandScope,
  commandEntities,
  type FloodLimits,
  randomId,
  type SimChat,
  type SimEvent,
  type SimMessage,
  type SimUser,
  type StoredMessage,
  scopeKey,
  telegramUser,
  toTelegram,
  World,
} from './bot-api-sim/world.ts';

export type { CallRecord, Failure } from './bot-api-sim/http.ts';
export type {
  ChatType,
  CommandList,
  CommandScope,
  FloodLimits,
  SimChat,
  SimEvent,
  SimInvoice,
  SimMessage,
  SimUser,
} from './bot-api-sim/world.ts';

/** A valid-looking token (`<bot id>:<35-character secret>`), the default the stand-in accepts. */
export const DEFAULT_BOT_TOKEN = '123456789:AAHsimulatedBotApiStandIn0123456789';
export const DEFAULT_BOT_USERNAME = 'redeem_sim_bot';

export interface BotApiSimOptions {
  /** Port on 127.0.0.1 (default 0: any free port). */
  port?: number;
  /** The token it accepts (default DEFAULT_BOT_TOKEN); the bot's id is its digits before the colon. */
  token?: string;
  /** The bot's username, as getMe answers it (default DEFAULT_BOT_USERNAME). */
  username?: string;
  /**
   * The first update_id (default random, between 10^8 and 9·10^8). Random because each stand-in
   * is a new bot to the service, but a test database may remember update ids from an earlier
   * one; Telegram, too, starts at a random number after a week without updates.
   */
  firstUpdateId?: number;
  /** How long pay() waits for answerPreCheckoutQuery (default 10,000 ms, Telegram's limit). */
  preCheckoutTimeoutMs?: number;
  /**
   * Answer the bot's sends over Telegram's rate with 429 and retry_after (off by default, so a
   * test that is not about pacing never waits): `true` is Telegram's rule of thumb,
   * TELEGRAM_FLOOD_LIMITS; see setFloodLimits().
   */
  floodLimits?: FloodLimits | true;
}

/** About 1 message a second per chat and 30 a second overall, as Telegram documents its limits. */
export const TELEGRAM_FLOOD_LIMITS: FloodLimits = {
  perChat: { messages: 1, windowMs: 1000 },
  overall: { messages: 30, windowMs: 1000 },
};

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

/** A deletion the bot made, in the order made. */
export interface SimDeletion {
  chat_id: number;
  message_id: number;
  from_bot: boolean;
  /** Date.now() when it was deleted. */
  at: number;
}

export interface BotApiSim {
  /** http://127.0.0.1:PORT, the service's BOT_API_ROOT. */
  url: string;
  token: string;
  bot: { id: number; username: string };
  server: Server;
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
  /** Every message of a chat (or of all chats), the people's and the bot's, oldest first. */
  messages(chatId?: number): SimMessage[];
  botMessages(chatId: number): SimMessage[];
  /** Every Bot API call received, oldest first. */
  calls: CallRecord[];
  /** Resolves with the probe's first truthy value, polling every 20 ms (default timeout 5 s). */
  waitFor<T>(probe: () => T | undefined | false | null, timeoutMs?: number): Promise<T>;
  /**
   * The next `times` (default 1) calls of `method` answer this error instead (after any failures
   * injected before for that method). A 429 carries `parameters.retry_after` (default 1).
   */
  failNext(method: string, answer: Failure, times?: number): void;
  /** Updates queued and not yet confirmed (or delivered to the webhook). */
  updatesPending(): number;
  /** The highest offset a getUpdates confirmed. */
  readonly confirmedOffset: number;
  /** The webhook set with setWebhook, if any. */
  webhook(): { url: string; secret?: string } | undefined;
  /**
   * The command list setMyCommands set for exactly this scope and language (default: the
   * default scope, every language), [] when none is set. It is what getMyCommands answers.
   */
  commands(scope?: CommandScope, languageCode?: string): { command: string; description: string }[];
  /** Every command list set, in the order first set. */
  commandLists(): CommandList[];
  /**
   * The command menu a person sees in a private chat (chat id = user id), resolved as Telegram
   * does: the chat's own list, then all private chats', then the default; at each step the list
   * for their language before the one for every language.
   */
  commandMenu(chatId: number, languageCode?: string): { command: string; description: string }[];
  /**
   * Switches the 429 pacing of the bot's sends (sendMessage, sendDocument, sendInvoice) on
   * (true: Telegram's limits) or off (undefined); sends count from the switch on.
   */
  setFloodLimits(limits: FloodLimits | true | undefined): void;
  /**
   * How long the person waited for a reply: ms from their message (`at`) to the first message
   * the bot sent in that chat after it, or undefined while there is none.
   */
  replyDelay(chatId: number, messageId: number): number | undefined;
  /** The messages deleted in a chat (or in all chats), in the order deleted. */
  deletions(chatId?: number): SimDeletion[];
  /** Listens to what the bot does in the chats (new message, edit, deletion, callback answer). */
  on(listener: (e: SimEvent) => void): () => void;
  close(): Promise<void>;
}

const MIME_BY_EXT: Record<string, string> = { txt: 'text/plain', csv: 'text/csv', json: 'application/json' };

export async function startBotApiSim(opts: BotApiSimOptions = {}): Promise<BotApiSim> {
  const token = opts.token ?? DEFAULT_BOT_TOKEN;
  const tokenParts = /^(\d{1,20}):[A-Za-z0-9_-]{30,}$/.exec(token);
  if (!tokenParts)
    throw new Error('startBotApiSim: token must look like <digits>:<secret of 30+ characters>');
  const bot = { id: Number(tokenParts[1]), username: opts.username ?? DEFAULT_BOT_USERNAME };
  const world = new World(bot, opts.firstUpdateId ?? randomInt(100_000_000, 900_000_000));
  const calls: CallRecord[] = [];
  // Injected failures per method (lowercase), spent in the order they were injected.
  const failures = new Map<string, { answer: Failure; left: number }[]>();
  const server = createBotApiServer({
    world,
    token,
    calls,
    takeFailure(method) {
      const list = failures.get(method.toLowerCase());
      const f = list?.[0];
      if (!f) return undefined;
      if (--f.left <= 0) list.shift();
      return f.answer;
    },
  });
  // grammY keeps idle connections open with no timeout of its own; were the server to close an
  // idle one (Node's default is after 5 s), a call sent on it at that moment would fail with a
  // reset. So connections stay until the client or close() ends them.
  server.keepAliveTimeout = 0;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port ?? 0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  const setFloodLimits = (limits: FloodLimits | true | undefined) => {
    world.setFloodLimits(limits === true ? TELEGRAM_FLOOD_LIMITS : limits);
  };
  setFloodLimits(opts.floodLimits);
  const people = createPeople(world, opts.preCheckoutTimeoutMs ?? 10_000);
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    bot,
    server,
    ...people,
    messages: (chatId) => world.messages.filter((m) => chatId === undefined || m.chat_id === chatId),
    botMessages: (chatId) => world.messages.filter((m) => m.chat_id === chatId && m.from_bot),
    calls,
    waitFor: (probe, timeoutMs = 5000) => waitFor(world, calls, probe, timeoutMs),
    failNext(method, answer, times = 1) {
      const key = method.toLowerCase();
      failures.set(key, [...(failures.get(key) ?? []), { answer, left: times }]);
    },
    updatesPending: () => world.pendingCount,
    get confirmedOffset() {
      return world.confirmedOffset;
    },
    webhook: () => world.webhook,
    commands: (scope = { type: 'default' }, languageCode = '') =>
      world.commands.get(scopeKey(scope, languageCode))?.commands ?? [],
    commandLists: () => [...world.commands.values()],
    commandMenu(chatId, languageCode = '') {
      const scopes: CommandScope[] = [
        { type: 'chat', chat_id: chatId },
        { type: 'all_private_chats' },
        { type: 'default' },
      ];
      for (const scope of scopes)
        for (const language of languageCode ? [languageCode, ''] : ['']) {
          const list = world.commands.get(scopeKey(scope, language));
          if (list) return list.commands;
        }
      return [];
    },
    setFloodLimits,
    replyDelay(chatId, messageId) {
      const chat = world.messages.filter((m) => m.chat_id === chatId);
      const asked = chat.find((m) => m.message_id === messageId && !m.from_bot);
      if (!asked) throw new Error(`replyDelay: no message ${messageId} of a person in chat ${chatId}`);
      const reply = chat.find((m) => m.from_bot && m.at >= asked.at && m.message_id > messageId);
      return reply ? reply.at - asked.at : undefined;
    },
    deletions: (chatId) =>
      world.messages
        .filter((m) => m.deleted_at !== undefined && (chatId === undefined || m.chat_id === chatId))
        .map((m) => ({
          chat_id: m.chat_id,
          message_id: m.message_id,
          from_bot: m.from_bot,
          at: m.deleted_at!,
        }))
        .sort((a, b) => a.at - b.at),
    on: (listener) => world.on(listener),
    async close() {
      world.close();
      for (const [id, waiting] of world.preCheckouts) {
        world.preCheckouts.delete(id);
        waiting({ ok: false, errorMessage: 'the stand-in was closed' });
      }
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

type People = Pick<
  BotApiSim,
  'sendText' | 'burst' | 'sendDocument' | 'press' | 'pushUpdate' | 'redeliver' | 'pay'
>;

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
function createPeople(world: World, preCheckoutTimeoutMs: number): People {
  let querySeq = 0;
  // Telegram's query ids are long decimal strings; a random head keeps two stand-ins' apart.
  const queryHead = randomInt(1_000_000_000, 9_999_999_999);
  const nextQueryId = () => `${queryHead}${String(++querySeq).padStart(9, '0')}`;

  function post(from: SimUser, chat: SimChat, fields: Partial<StoredMessage>, date?: number) {
    const { m, update } = write(world, from, chat, fields, date);
    return Promise.resolve({ updateId: world.push(update), messageId: m.message_id });
  }

  return {
    async sendText(from, text, opts) {
      return post(from, chatOf(from, opts), textFields('sendText', text), opts?.date);
    },
    async burst(from, texts, opts) {
      const fields = texts.map((t) => textFields('burst', t));
      const written = fields.map((f) => write(world, from, chatOf(from, opts), f, opts?.date));
      const updateIds = world.pushMany(written.map((w) => w.update));
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
      const updateId = world.push({
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
    pushUpdate: (update) => world.push(recordRaw(world, update)),
    redeliver: (updateId) => world.redeliver(updateId),
    async pay(from, invoice, opts = {}) {
      const stored = world.findMessage(invoice.chat_id, invoice.message_id);
      if (!stored?.invoice) throw new Error(`pay: message ${invoice.message_id} is not a live invoice`);
      const currency = opts.currency ?? stored.invoice.currency;
      const total = opts.totalAmount ?? stored.invoice.total_amount;
      const id = nextQueryId();
      const answered = new Promise<{ ok: boolean; errorMessage?: string }>((resolve) => {
        world.preCheckouts.set(id, resolve);
      });
      world.push({
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

/** The inline buttons of a message, row after row. */
export function buttonsOf(m: SimMessage): { text: string; callback_data?: string; url?: string }[] {
  const rows = (m.reply_markup as { inline_keyboard?: unknown } | undefined)?.inline_keyboard;
  return Array.isArray(rows) ? (rows.flat() as { text: string; callback_data?: string; url?: string }[]) : [];
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

async function waitFor<T>(
  world: World,
  calls: CallRecord[],
  probe: () => T | undefined | false | null,
  timeoutMs: number,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let lastError: unknown;
  for (;;) {
    try {
      const value = probe();
      if (value) return value;
    } catch (err) {
      lastError = err;
    }
    if (Date.now() >= deadline) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  const recent = world.messages
    .slice(-6)
    .map(
      (m) =>
        `  chat ${m.chat_id} #${m.message_id} ${m.from_bot ? 'bot' : 'user'}${m.deleted ? ' (deleted)' : ''}: ${JSON.stringify(m.text ?? m.caption ?? (m.invoice ? `[invoice ${m.invoice.title}]` : '[no text]'))}`,
    )
    .join('\n');
  const lastCalls = calls
    .slice(-6)
    .map((c) => `${c.method}${c.error_code ? ` (${c.error_code})` : ''}`)
    .join(', ');
  throw new Error(
    `waitFor: nothing within ${timeoutMs} ms${lastError ? ` (the probe last threw: ${(lastError as Error).message})` : ''}\n` +
      `last messages:\n${recent || '  none'}\nlast Bot API calls: ${lastCalls || 'none'}; updates queued: ${world.pendingCount}`,
  );
}
