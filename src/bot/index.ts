// The chat bot of the process (docs/reference/bot.md), on when BOT_TOKEN is set: grammY against
// BOT_API_ROOT, its calls retried with backoff (honouring a 429's retry_after) and throttled to
// Telegram's limits, the gate and the commands, updates by long polling (one poller across
// processes) or at POST /bot/updates, and the loop that reports manual redeems to their chats.
//
// How an update flows: on arrival it is admitted (gate.ts: served, new, within its person's
// limit counted at arrival), then handled in its chat's turn: grammY runner's `sequentialize`
// keeps one chat's updates in order while chats run side by side, so one person's burst, whose
// replies Telegram paces at one a second, never holds another person up.
import { autoRetry } from '@grammyjs/auto-retry';
import { sequentialize } from '@grammyjs/runner';
import { apiThrottler } from '@grammyjs/transformer-throttler';
import { Bot, type Transformer } from 'grammy';
import type { Update } from 'grammy/types';
import { type BackgroundLoop, startBackgroundLoop } from '../core/background-loop.ts';
import { isConnectionError } from '../db/database.ts';
import type { BotDoor, ServerContext } from '../http/context.ts';
import { sendAlerts } from './alerts.ts';
import { deleteIfHoldsCodes } from './codes-in-chat.ts';
import { setAllMenus, setChatMenu } from './command-menu.ts';
import { accountFeature } from './commands/account.ts';
import { addStockFeature } from './commands/addstock.ts';
import { alertsFeature } from './commands/alerts.ts';
import { cancelFeature } from './commands/cancel.ts';
import { checkFeature } from './commands/check.ts';
import { redeemFeature } from './commands/redeem.ts';
import { walletFeature } from './commands/wallet.ts';
import type { BotContext } from './context.ts';
import { fallbacks } from './fallbacks.ts';
import { admitUpdate, chatKey, isPayment } from './gate.ts';
import { linked } from './guards.ts';
import { ALLOWED_UPDATES, type Poller, startPolling } from './polling.ts';
import { errorInfo, reportProgress } from './progress.ts';

export interface RunningBot {
  door: BotDoor;
  poller: Poller | null;
  stop(): Promise<void>;
}

const REPLY_METHODS = new Set(['sendMessage', 'editMessageText', 'sendInvoice', 'deleteMessage']);

/** Counts replies and the calls that failed after their retries (the outermost transformer). */
function counted(app: ServerContext): Transformer {
  return async (prev, method, payload, signal) => {
    try {
      const res = await prev(method, payload, signal);
      if (!res.ok) app.metrics.bot.apiError(method, res.error_code);
      else if (REPLY_METHODS.has(method)) app.metrics.bot.reply(method);
      return res;
    } catch (err) {
      app.metrics.bot.apiError(method, 0);
      throw err;
    }
  };
}

const codesNotDeleted = (app: ServerContext) => (errName: string | undefined) =>
  app.logger.warn({ errName }, 'bot: a message holding codes could not be deleted');

export function buildBot(app: ServerContext, token: string): Bot<BotContext> {
  const bot = new Bot<BotContext>(token, { client: { apiRoot: app.config.BOT_API_ROOT } });
  bot.api.config.use(apiThrottler());
  bot.api.config.use(autoRetry({ maxRetryAttempts: 5, maxDelaySeconds: 120 }));
  bot.api.config.use(counted(app));
  // The order an update meets the middleware is the order of these `use` calls (grammY runs them
  // in turn; a handler that answers does not call next):
  //   1. sequentialize: one chat's updates in order, different chats side by side;
  //   2. the codes-in-chat rule, around everything after it;
  //   3. linked (guards.ts): names the person; an unlinked one is answered here and stops;
  //   4. the features, one Composer each (bot/commands/): each handles only its own commands,
  //      buttons and updates, and calls no catch-all; an owner's command has ownerOnly in front;
  //   5. the fallbacks, last: a button no feature knows, and any other message.
  bot.use(sequentialize((c: BotContext) => chatKey(c.update) ?? `u${c.update.update_id}`));
  // Whatever comes of it, a message that may hold codes leaves the chat once it was read.
  bot.use(async (c, next) => {
    try {
      await next();
    } finally {
      await deleteIfHoldsCodes(bot.api, c.update, codesNotDeleted(app));
    }
  });
  bot.use(linked(app));
  bot.use(
    accountFeature,
    addStockFeature,
    checkFeature,
    redeemFeature,
    walletFeature,
    alertsFeature,
    cancelFeature,
  );
  bot.use(fallbacks);
  return bot;
}

export async function startBot(app: ServerContext): Promise<RunningBot | undefined> {
  const config = app.config;
  if (!config.BOT_TOKEN) return undefined;
  const bot = buildBot(app, config.BOT_TOKEN);
  try {
    await bot.init();
  } catch (err) {
    throw new Error(
      `the chat bot could not reach the Bot API at ${config.BOT_API_ROOT} (getMe: ${errorInfo(err).description ?? errorInfo(err).name})`,
    );
  }
  const handleUpdate = async (update: Update) => {
    try {
      await bot.handleUpdate(update);
    } catch (err) {
      const cause = (err as { error?: unknown }).error ?? err;
      app.logger.error(
        { err: errorInfo(cause), kind: Object.keys(update).find((k) => k !== 'update_id') },
        'bot: an update failed',
      );
      const chatId = update.message?.chat.id ?? update.callback_query?.message?.chat.id;
      if (
        chatId !== undefined &&
        (update.message?.chat.type ?? update.callback_query?.message?.chat.type) === 'private'
      )
        await bot.api
          .sendMessage(
            chatId,
            isConnectionError(cause)
              ? 'The service is briefly unavailable; nothing was done. Try again in a minute.'
              : 'Something went wrong; nothing was done. Try again, or ask your operator.',
          )
          .catch(() => undefined);
    }
  };
  // Updates being handled, so a stop waits for them.
  const handling = new Set<Promise<void>>();
  /**
   * An update arrived at `receivedAt`: admitted (or dropped) now, in arrival order; `done`
   * settles when its chat's turn has handled it.
   */
  const receive = async (update: Update, receivedAt: Date) => {
    // A failure here (the database away) records nothing: the caller logs it, and the update is
    // neither confirmed (polling) nor answered 200 (webhook), so it comes again.
    const admission = await admitUpdate(app, bot.api, update, receivedAt);
    // Not awaited: the deletion waits behind the chat's paced replies, and the next update's
    // arrival must not.
    if (admission === 'limited') void deleteIfHoldsCodes(bot.api, update, codesNotDeleted(app));
    if (admission !== 'admitted') return { admission, done: Promise.resolve() };
    const done = handleUpdate(update);
    handling.add(done);
    void done.finally(() => handling.delete(done));
    return { admission, done };
  };
  let poller: Poller | null = null;
  if (config.BOT_UPDATES === 'webhook') {
    if (config.BOT_WEBHOOK_URL)
      await bot.api.setWebhook(config.BOT_WEBHOOK_URL, {
        secret_token: config.BOT_WEBHOOK_SECRET,
        allowed_updates: [...ALLOWED_UPDATES],
      });
  } else {
    poller = startPolling(app, bot.api, bot.botInfo.id, receive);
  }
  void setAllMenus(app, bot.api);
  const progress: BackgroundLoop = startBackgroundLoop({
    name: 'bot progress',
    intervalMs: 1000,
    logger: app.logger,
    pass: () => reportProgress(app, bot.api),
  });
  const alerts: BackgroundLoop = startBackgroundLoop({
    name: 'bot alerts',
    intervalMs: config.BOT_ALERT_INTERVAL_MS,
    initialDelayMs: Math.min(5000, config.BOT_ALERT_INTERVAL_MS),
    logger: app.logger,
    pass: () => sendAlerts(app, bot.api),
  });
  const door: BotDoor = {
    username: bot.botInfo.username,
    updates: config.BOT_UPDATES,
    // A webhook delivery is answered once the update is admitted; a payment (money taken, or a
    // pre-checkout Telegram waits 10 s for) once it is handled too.
    async handleUpdate(raw) {
      const update = raw as Update;
      const { done } = await receive(update, app.clock.now());
      if (isPayment(update)) await done;
    },
    menuChanged: (chatId, role) => setChatMenu(app, bot.api, chatId, role),
    async tell(chatId, text) {
      await bot.api
        .sendMessage(chatId, text)
        .catch((err: unknown) => app.logger.warn({ err: errorInfo(err) }, 'bot: could not tell a chat'));
    },
  };
  return {
    door,
    poller,
    async stop() {
      await Promise.all([poller?.stop(), progress.stop(), alerts.stop()]);
      await Promise.all([...handling]);
    },
  };
}
