// The Bot API stand-in's memory: chats and their messages, uploaded files, the queue of updates
// and how it reaches the bot (long polling or a webhook), as Telegram keeps them for one bot.
// Everything here is plain data and synchronous bookkeeping, except the two waits Telegram has:
// a long poll waiting for an update, and a webhook delivery being retried.
import { randomBytes } from 'node:crypto';
import { deliverUpdate } from './webhook-delivery.ts';

/** A failure answered the Telegram way: `{ok: false, error_code, description, parameters?}`. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly code: number,
    description: string,
    readonly retryAfter?: number,
  ) {
    super(description);
  }
}

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

type Json = Record<string, unknown>;
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

interface Queued {
  update: Update;
  /** A copy queued again by redeliver(): delivered once more whatever the offset, then gone. */
  redelivery: boolean;
}

interface Poller {
  limit: number;
  finish(answer: Update[] | ApiError): void;
}

const now = () => Math.floor(Date.now() / 1000);
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

export class World {
  readonly bot: { id: number; username: string; first_name: string };
  readonly botUser: Json;
  readonly messages: StoredMessage[] = [];
  private readonly chats = new Map<
    number,
    { chat: Json; nextId: number; byId: Map<number, StoredMessage> }
  >();
  readonly files = new Map<string, StoredFile>();
  private fileSeq = 0;

  private pending: Queued[] = [];
  private readonly history = new Map<number, Update>();
  private nextUpdateId: number;
  /** The highest offset a getUpdates has confirmed (every update below it is gone). */
  confirmedOffset = 0;
  private allowedUpdates: string[] | undefined;
  private poller: Poller | undefined;
  /** True while pushMany() queues: the updates are handed out together once all are queued. */
  private holdWake = false;

  webhook: { url: string; secret?: string } | undefined;
  webhookError: { date: number; message: string } | undefined;
  /** How many updates are POSTed at once (setWebhook's max_connections; Telegram's default 40). */
  maxConnections = 40;
  /** Updates being POSTed now, and the chats they are for: one at a time per chat. */
  private readonly inFlight = new Set<Queued>();
  private readonly busyChats = new Set<string>();
  closed = false;

  /** Callback queries sent, by id: each may be answered once. */
  readonly callbackQueries = new Map<string, { answered: boolean }>();
  /** Pre-checkout queries waiting for answerPreCheckoutQuery, by id. */
  readonly preCheckouts = new Map<string, (answer: { ok: boolean; errorMessage?: string }) => void>();
  /**
   * The bot's command lists as setMyCommands set them, one per scope and language
   * (key: scopeKey()); deleteMyCommands removes one, and Telegram then shows the next wider one.
   */
  readonly commands = new Map<string, CommandList>();
  /** Optional per-chat and overall send limits, answered with 429 as Telegram does. */
  private floodLimits: FloodLimits | undefined;
  /** The times of the bot's recent sends, per chat and overall, for floodLimits. */
  private readonly lastSend = new Map<number, number[]>();
  private recentSends: number[] = [];

  private readonly listeners = new Set<(e: SimEvent) => void>();

  constructor(bot: { id: number; username: string }, firstUpdateId: number) {
    this.bot = { ...bot, first_name: 'Redeem Gateway (sim)' };
    this.botUser = { id: bot.id, is_bot: true, first_name: this.bot.first_name, username: bot.username };
    this.nextUpdateId = firstUpdateId;
  }

  on(listener: (e: SimEvent) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  emit(e: SimEvent): void {
    for (const l of this.listeners) l(e);
  }

  // ── chats and messages ────────────────────────────────────────────────────────────────────

  /** Makes the chat known (Telegram knows a chat once someone wrote in it). */
  openChat(chat: SimChat, user?: SimUser): Json {
    const known = this.chats.get(chat.id);
    if (known) return known.chat;
    const json: Json =
      chat.type === 'private'
        ? { id: chat.id, type: 'private', ...userNames(user) }
        : { id: chat.id, type: chat.type, title: `Sim ${chat.type} ${chat.id}` };
    this.chats.set(chat.id, { chat: json, nextId: 1, byId: new Map() });
    return json;
  }

  /** The chat, or Telegram's "chat not found" for one nobody wrote in. */
  chat(chatId: number): Json {
    const known = this.chats.get(chatId);
    if (!known) throw new ApiError(400, 'Bad Request: chat not found');
    return known.chat;
  }

  /** Stores a new message with the chat's next id (message ids increase per chat). */
  addMessage(chatId: number, from: Json, fields: Partial<StoredMessage>): StoredMessage {
    const chat = this.chats.get(chatId);
    if (!chat) throw new ApiError(400, 'Bad Request: chat not found');
    const message: StoredMessage = {
      message_id: fields.message_id ?? chat.nextId,
      chat_id: chatId,
      edits: [],
      deleted: false,
      from_bot: from.id === this.bot.id,
      from,
      chat: chat.chat,
      date: now(),
      at: Date.now(),
      extra: {},
      ...fields,
    };
    chat.nextId = Math.max(chat.nextId, message.message_id + 1);
    chat.byId.set(message.message_id, message);
    this.messages.push(message);
    if (message.from_bot) this.emit({ type: 'message', message });
    return message;
  }

  findMessage(chatId: number, messageId: number): StoredMessage | undefined {
    const m = this.chats.get(chatId)?.byId.get(messageId);
    return m && !m.deleted ? m : undefined;
  }

  // ── files ─────────────────────────────────────────────────────────────────────────────────

  addFile(fileName: string, content: Buffer, mimeType: string): StoredFile {
    const n = ++this.fileSeq;
    const ext = /\.([A-Za-z0-9]{1,8})$/.exec(fileName)?.[1] ?? 'dat';
    const file: StoredFile = {
      // Telegram's ids are opaque base64url strings; these look alike and never repeat.
      file_id: `BQACAgIAAxkBAAI${randomId(24)}`,
      file_unique_id: `AgAD${randomId(9)}`,
      file_path: `documents/file_${n}.${ext}`,
      file_name: fileName,
      mime_type: mimeType,
      content,
    };
    this.files.set(file.file_id, file);
    return file;
  }

  fileByPath(path: string): StoredFile | undefined {
    for (const f of this.files.values()) if (f.file_path === path) return f;
    return undefined;
  }

  // ── updates ───────────────────────────────────────────────────────────────────────────────

  /** Queues an update (numbering it unless it has a number) and wakes whoever takes updates. */
  push(update: Json): number {
    const updateId = typeof update.update_id === 'number' ? update.update_id : this.nextUpdateId++;
    if (updateId >= this.nextUpdateId) this.nextUpdateId = updateId + 1;
    const full = { ...update, update_id: updateId } as Update;
    this.history.set(updateId, full);
    this.enqueue({ update: full, redelivery: false });
    return updateId;
  }

  /**
   * Queues several updates at once: a poll waiting meanwhile is answered with all of them in
   * one batch (push() one by one would wake it with the first alone), and a webhook gets them
   * one after the other with no pause.
   */
  pushMany(updates: Json[]): number[] {
    this.holdWake = true;
    try {
      return updates.map((u) => this.push(u));
    } finally {
      this.holdWake = false;
      this.wake();
    }
  }

  redeliver(updateId: number): void {
    const update = this.history.get(updateId);
    if (!update) throw new Error(`redeliver: no update ${updateId} was ever sent`);
    this.enqueue({ update, redelivery: true });
  }

  get pendingCount(): number {
    return this.pending.length;
  }

  private enqueue(entry: Queued): void {
    // A redelivered copy goes first: in one batch after newer updates, grammY would take its
    // (older) id for the next offset and be handed the newer ones a second time.
    if (entry.redelivery) this.pending.unshift(entry);
    else this.pending.push(entry);
    if (!this.holdWake) this.wake();
  }

  /** Hands what is queued to whoever takes updates: the webhook, or a poll waiting. */
  private wake(): void {
    if (this.webhook) this.pump();
    else if (this.poller) {
      const batch = this.take(this.poller.limit);
      if (batch.length) this.poller.finish(batch);
    }
  }

  /**
   * getUpdates: confirms what is below `offset`, answers what is queued, or waits up to
   * `timeout` seconds for the first update. A newer call ends a waiting one with 409, as
   * Telegram does when two processes poll one bot.
   */
  getUpdates(p: {
    offset?: number;
    limit?: number;
    timeout?: number;
    allowed?: string[];
    signal?: AbortSignal;
  }): Promise<Update[]> {
    if (this.webhook)
      throw new ApiError(
        409,
        "Conflict: can't use getUpdates method while webhook is active; use deleteWebhook to delete the webhook first",
      );
    this.poller?.finish(
      new ApiError(
        409,
        'Conflict: terminated by other getUpdates request; make sure that only one bot instance is running',
      ),
    );
    if (p.allowed) this.allowedUpdates = p.allowed.length ? p.allowed : undefined;
    this.confirm(p.offset ?? 0);
    const limit = Math.min(Math.max(p.limit ?? 100, 1), 100);
    const ready = this.take(limit);
    const timeout = Math.min(Math.max(p.timeout ?? 0, 0), 50);
    if (ready.length || timeout === 0) return Promise.resolve(ready);
    return new Promise((resolve, reject) => {
      const poller: Poller = {
        limit,
        finish: (answer) => {
          if (this.poller === poller) this.poller = undefined;
          clearTimeout(timer);
          if (answer instanceof ApiError) reject(answer);
          else resolve(answer);
        },
      };
      const timer = setTimeout(() => poller.finish(this.take(limit)), timeout * 1000);
      // A client that went away stops waiting; its updates stay queued for the next poll.
      p.signal?.addEventListener('abort', () => poller.finish([]), { once: true });
      this.poller = poller;
    });
  }

  private confirm(offset: number): void {
    if (offset > 0) {
      this.pending = this.pending.filter((q) => q.redelivery || q.update.update_id >= offset);
      this.confirmedOffset = Math.max(this.confirmedOffset, offset);
    } else if (offset < 0) {
      // Telegram: a negative offset keeps only the last -offset updates, forgetting the rest.
      this.pending = this.pending.slice(offset);
    }
  }

  /** The next updates to hand out; normal ones stay queued until confirmed, copies go now. */
  private take(limit: number): Update[] {
    if (this.allowedUpdates) {
      const allowed = this.allowedUpdates;
      this.pending = this.pending.filter((q) => allowed.includes(updateKind(q.update)));
    }
    const batch = this.pending.slice(0, limit);
    this.pending = this.pending.filter((q) => !(q.redelivery && batch.includes(q)));
    return batch.map((q) => q.update);
  }

  // ── webhook ───────────────────────────────────────────────────────────────────────────────

  setWebhook(url: string, secret: string | undefined, dropPending: boolean, maxConnections = 40): void {
    this.webhook = { url, ...(secret ? { secret } : {}) };
    this.maxConnections = maxConnections;
    this.webhookError = undefined;
    if (dropPending) this.pending = [];
    this.poller?.finish(new ApiError(409, 'Conflict: terminated by setWebhook request'));
    this.pump();
  }

  deleteWebhook(dropPending: boolean): void {
    this.webhook = undefined;
    if (dropPending) this.pending = [];
  }

  /**
   * Delivers queued updates to the webhook as Telegram does, several at once (up to
   * maxConnections) so one slow chat does not hold up the others, but one at a time per chat and
   * in order, each retried a few times.
   */
  private pump(): void {
    const hook = this.webhook;
    if (!hook || this.closed) return;
    for (const entry of this.pending) {
      if (this.inFlight.size >= this.maxConnections) break;
      const chat = chatOf(entry.update);
      if (this.inFlight.has(entry) || this.busyChats.has(chat)) continue;
      this.inFlight.add(entry);
      this.busyChats.add(chat);
      void this.deliver(hook, entry, chat);
    }
  }

  private async deliver(hook: { url: string; secret?: string }, entry: Queued, chat: string): Promise<void> {
    const delivered = await deliverUpdate(hook, entry.update, {
      stillWanted: () => !this.closed && this.webhook === hook,
      failed: (message) => {
        this.webhookError = { date: now(), message };
      },
    });
    this.inFlight.delete(entry);
    this.busyChats.delete(chat);
    // A webhook changed or removed meanwhile keeps the update queued for what comes next.
    if (delivered || this.webhook === hook) this.pending = this.pending.filter((q) => q !== entry);
    this.pump();
  }

  // ── flood limits ──────────────────────────────────────────────────────────────────────────

  /** Sets the limits (undefined: none); sends count from here on, under the new limits. */
  setFloodLimits(limits: FloodLimits | undefined): void {
    this.floodLimits = limits;
    this.lastSend.clear();
    this.recentSends = [];
  }

  /**
   * Counts one message the bot sends to the chat, or refuses it with Telegram's 429 and the
   * seconds to wait when floodLimits are on and the chat or the bot as a whole sent too many.
   */
  countSend(chatId: number): void {
    const limits = this.floodLimits;
    if (!limits) return;
    const t = Date.now();
    const inChat = (this.lastSend.get(chatId) ?? []).filter((x) => x > t - limits.perChat.windowMs);
    this.recentSends = this.recentSends.filter((x) => x > t - limits.overall.windowMs);
    let waitMs = 0;
    if (inChat.length >= limits.perChat.messages)
      waitMs = inChat[inChat.length - limits.perChat.messages]! + limits.perChat.windowMs - t;
    if (this.recentSends.length >= limits.overall.messages)
      waitMs = Math.max(
        waitMs,
        this.recentSends[this.recentSends.length - limits.overall.messages]! + limits.overall.windowMs - t,
      );
    if (waitMs > 0) {
      const retryAfter = Math.max(1, Math.ceil(waitMs / 1000));
      throw new ApiError(429, `Too Many Requests: retry after ${retryAfter}`, retryAfter);
    }
    inChat.push(t);
    this.lastSend.set(chatId, inChat);
    this.recentSends.push(t);
  }

  close(): void {
    this.closed = true;
    this.poller?.finish([]);
    this.listeners.clear();
  }
}

export interface FloodLimits {
  /** At most `messages` sends to one chat in any `windowMs` (Telegram: about 1 a second). */
  perChat: { messages: number; windowMs: number };
  /** At most `messages` sends overall in any `windowMs` (Telegram: about 30 a second). */
  overall: { messages: number; windowMs: number };
}

/** A BotCommandScope as setMyCommands takes it (Telegram's `type` names). */
export type CommandScope =
  | { type: 'default' }
  | { type: 'all_private_chats' }
  | { type: 'all_group_chats' }
  | { type: 'all_chat_administrators' }
  | { type: 'chat'; chat_id: number }
  | { type: 'chat_administrators'; chat_id: number }
  | { type: 'chat_member'; chat_id: number; user_id: number };

/** One command list the bot set: its scope, its language ('' for every language) and commands. */
export interface CommandList {
  scope: CommandScope;
  languageCode: string;
  commands: { command: string; description: string }[];
}

/** The key a command list is stored under: the scope, its chat and user, and the language. */
export function scopeKey(scope: CommandScope, languageCode = ''): string {
  const where =
    scope.type === 'chat' || scope.type === 'chat_administrators'
      ? `${scope.type}:${scope.chat_id}`
      : scope.type === 'chat_member'
        ? `chat_member:${scope.chat_id}:${scope.user_id}`
        : scope.type;
  return `${where}|${languageCode}`;
}

function userNames(user: SimUser | undefined): Json {
  return {
    first_name: user?.first_name ?? `User ${user?.id ?? ''}`.trim(),
    ...(user?.username ? { username: user.username } : {}),
  };
}

/** Telegram's user object for a simulated person. */
export function telegramUser(user: SimUser): Json {
  return { id: user.id, is_bot: false, ...userNames(user), language_code: user.language_code ?? 'en' };
}
/** The chat an update belongs to (its person's, for a query), so one chat's go in order. */
function chatOf(u: Update): string {
  const body = u[updateKind(u)] as
    | { chat?: { id?: unknown }; message?: { chat?: { id?: unknown } }; from?: { id?: unknown } }
    | undefined;
  const id = body?.chat?.id ?? body?.message?.chat?.id ?? body?.from?.id;
  return id === undefined ? `update ${u.update_id}` : String(id);
}

/** The kind of an update: its one field besides update_id (message, callback_query …). */
const updateKind = (u: Update) => Object.keys(u).find((k) => k !== 'update_id') ?? 'unknown';
