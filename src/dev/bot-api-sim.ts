// A local stand-in for Telegram's Bot API, for the chat bot's tests and `redeem-gateway bot-sim`:
// a real HTTP server on 127.0.0.1 in Telegram's layout (grammY talks to it through
// BOT_API_ROOT), plus a control object that plays the people on the other side: they write,
// send files, press buttons and pay, and a test reads back every message of every chat.
//
// The pieces, in bot-api-sim/: world.ts (chats, messages, files) with update-queue.ts (the
// update queue, long polling), webhook-delivery.ts, command-menus.ts and flood-pacing.ts;
// methods.ts, command-methods.ts and update-methods.ts (the Bot API methods); params.ts (bodies
// off the wire); http.ts (the routes); people.ts (what the people do); wait-for.ts.
import { randomInt } from 'node:crypto';
import type { Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { CommandList, CommandScope } from './bot-api-sim/command-menus.ts';
import { type FloodLimits, TELEGRAM_FLOOD_LIMITS } from './bot-api-sim/flood-pacing.ts';
import { type CallRecord, createBotApiServer, type Failure } from './bot-api-sim/http.ts';
import { createPeople, type People } from './bot-api-sim/people.ts';
import type { SimEvent, SimMessage } from './bot-api-sim/telegram-objects.ts';
import { waitFor } from './bot-api-sim/wait-for.ts';
import { World } from './bot-api-sim/world.ts';

export type { CommandList, CommandScope } from './bot-api-sim/command-menus.ts';
export { type FloodLimits, TELEGRAM_FLOOD_LIMITS } from './bot-api-sim/flood-pacing.ts';
export type { CallRecord, Failure } from './bot-api-sim/http.ts';
export { MAX_MESSAGE_LENGTH, type SendOptions } from './bot-api-sim/people.ts';
export {
  buttonsOf,
  type ChatType,
  type SimChat,
  type SimEvent,
  type SimInvoice,
  type SimMessage,
  type SimUser,
} from './bot-api-sim/telegram-objects.ts';

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

/** A deletion the bot made, in the order made. */
export interface SimDeletion {
  chat_id: number;
  message_id: number;
  from_bot: boolean;
  /** Date.now() when it was deleted. */
  at: number;
}

export interface BotApiSim extends People {
  /** http://127.0.0.1:PORT, the service's BOT_API_ROOT. */
  url: string;
  token: string;
  bot: { id: number; username: string };
  server: Server;
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
    world.pacing.setLimits(limits === true ? TELEGRAM_FLOOD_LIMITS : limits);
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
    updatesPending: () => world.updates.pendingCount,
    get confirmedOffset() {
      return world.updates.confirmedOffset;
    },
    webhook: () => world.webhook.target,
    commands: (scope = { type: 'default' }, languageCode = '') =>
      world.commands.get(scope, languageCode)?.commands ?? [],
    commandLists: () => world.commands.all(),
    commandMenu: (chatId, languageCode = '') => world.commands.menu(chatId, languageCode),
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
