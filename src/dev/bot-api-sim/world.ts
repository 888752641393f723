// The Bot API stand-in's memory: chats and their messages, uploaded files, the queries waiting
// for an answer, and the pieces kept beside them (the update queue and its webhook, the command
// menus, the flood pacing), as Telegram keeps them for one bot. Everything here is plain data and
// synchronous bookkeeping; the two waits Telegram has (a long poll, a webhook delivery being
// retried) are in update-queue.ts and webhook-delivery.ts.
import { ApiError } from './api-error.ts';
import { CommandMenus } from './command-menus.ts';
import { FloodPacer } from './flood-pacing.ts';
import {
  type Json,
  randomId,
  type SimChat,
  type SimEvent,
  type SimUser,
  type StoredFile,
  type StoredMessage,
  userNames,
} from './telegram-objects.ts';
import { UpdateQueue } from './update-queue.ts';
import { WebhookDelivery } from './webhook-delivery.ts';

const now = () => Math.floor(Date.now() / 1000);

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

  /** The updates for the bot, taken by getUpdates or delivered to the webhook. */
  readonly updates: UpdateQueue;
  readonly webhook: WebhookDelivery;

  /** Callback queries sent, by id: each may be answered once. */
  readonly callbackQueries = new Map<string, { answered: boolean }>();
  /** Pre-checkout queries waiting for answerPreCheckoutQuery, by id. */
  readonly preCheckouts = new Map<string, (answer: { ok: boolean; errorMessage?: string }) => void>();
  /** The bot's command lists as setMyCommands set them, one per scope and language. */
  readonly commands = new CommandMenus();
  /** Optional per-chat and overall send limits, answered with 429 as Telegram does. */
  readonly pacing = new FloodPacer();

  private readonly listeners = new Set<(e: SimEvent) => void>();

  constructor(bot: { id: number; username: string }, firstUpdateId: number) {
    this.bot = { ...bot, first_name: 'Redeem Gateway (sim)' };
    this.botUser = { id: bot.id, is_bot: true, first_name: this.bot.first_name, username: bot.username };
    this.updates = new UpdateQueue(firstUpdateId, {
      webhookActive: () => this.webhook.target !== undefined,
      pushToWebhook: () => this.webhook.pump(),
    });
    this.webhook = new WebhookDelivery(this.updates);
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

  close(): void {
    this.webhook.close();
    this.updates.endPoll([]);
    this.listeners.clear();
  }
}
