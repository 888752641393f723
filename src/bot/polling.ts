// Long polling with one poller across processes (docs/reference/bot.md#running-the-bot): a process polls getUpdates only
// while it holds the lease in the database (core/bot/poll-lease.ts), renewing it as it goes; the
// others try to take it every few seconds, so when the poller stops or dies another takes over
// within LEASE_TTL_MS + TAKE_EVERY_MS (under 30 s).
//
// Each batch is admitted as it arrives (its receipt time counts against each person's limit) and
// handed to the chats' turns; the next batch is read while busy chats still reply. An update is
// confirmed to Telegram (the next offset) only once it and every update before it were handled,
// so a takeover or a restart reads the unfinished ones again, and their update_id (recorded in
// the transaction of their effect) keeps them from being acted on twice. While updates are in
// hand, getUpdates is asked without waiting and returns them again: only the ones not seen yet
// are taken, and the loop waits for a handled update (or a quarter second) between such reads.
//
// Why not @grammyjs/runner's own poller: it polls unconditionally and confirms updates as it
// fetches them; a lease must be able to stop the poll at once, and an update must not be confirmed
// before it was handled. Its `sequentialize` keeps each chat's order (bot/index.ts).
import type { Api } from 'grammy';
import type { Update } from 'grammy/types';
import { releasePollLease, takePollLease } from '../core/bot/poll-lease.ts';
import { INSTANCE_ID } from '../core/instance.ts';
import type { ServerContext } from '../http/context.ts';
import { errorInfo } from './progress.ts';

export const LEASE_TTL_MS = 15_000;
const TAKE_EVERY_MS = 3_000;
/** Seconds a getUpdates call waits for an update (well under the lease). */
const POLL_TIMEOUT_S = 10;
/** Between two reads while updates are in hand and nothing new came. */
const BUSY_READ_MS = 250;
export const ALLOWED_UPDATES = ['message', 'callback_query', 'pre_checkout_query'] as const;

/** What the bot does with an update that arrived at `receivedAt`: admit it now, handle it in `done`. */
export type Receive = (update: Update, receivedAt: Date) => Promise<{ done: Promise<void> }>;

export interface Poller {
  /** Whether this process polls now. */
  polling(): boolean;
  stop(): Promise<void>;
}

/** The updates taken from Telegram and not handled yet, by update_id. */
function updatesInHand() {
  const inHand = new Map<number, Promise<void>>();
  return {
    size: () => inHand.size,
    has: (id: number) => inHand.has(id),
    /** The offset that confirms what may be confirmed: everything before the oldest in hand. */
    offset: (next: number) => (inHand.size > 0 ? Math.min(...inHand.keys()) : next > 0 ? next : undefined),
    add(id: number, done: Promise<void>) {
      inHand.set(id, done);
      void done.finally(() => inHand.delete(id));
    },
    /** Until one is handled, or a quarter second. */
    oneHandled: () => Promise.race([...inHand.values(), new Promise((r) => setTimeout(r, BUSY_READ_MS))]),
    all: () => Promise.all(inHand.values()),
  };
}

export function startPolling(
  app: ServerContext,
  api: Api,
  botId: number,
  receive: Receive,
  opts: { leaseTtlMs?: number; takeEveryMs?: number } = {},
): Poller {
  const ttl = opts.leaseTtlMs ?? LEASE_TTL_MS;
  const takeEvery = opts.takeEveryMs ?? TAKE_EVERY_MS;
  let stopped = false;
  let holding = false;
  let abort: AbortController | null = null;
  let wake: (() => void) | null = null;
  let webhookCleared = false;
  const sleep = (ms: number) =>
    new Promise<void>((resolve) => {
      const t = setTimeout(resolve, ms);
      wake = () => {
        clearTimeout(t);
        resolve();
      };
    });

  const lease = async () => {
    try {
      // On the embedded database this is the only process: a lease left by a crash is ours.
      holding = await takePollLease(
        app.db,
        botId,
        INSTANCE_ID,
        app.clock.now(),
        ttl,
        app.db.kind === 'pglite',
      );
    } catch (err) {
      holding = false;
      app.logger.warn({ err }, 'bot: could not take or renew the polling lease');
    }
    if (!holding) abort?.abort();
    return holding;
  };

  const inHand = updatesInHand();
  const run = (async () => {
    /** The first update_id not taken yet. */
    let next = 0;
    let failures = 0;
    // Renewed well before it runs out, also while a long poll waits.
    const renew = setInterval(
      () => {
        if (holding) void lease();
      },
      Math.max(500, Math.floor(ttl / 3)),
    );
    try {
      while (!stopped) {
        if (!holding && !(await lease())) {
          await sleep(takeEvery);
          continue;
        }
        try {
          if (!webhookCleared) {
            await api.deleteWebhook();
            webhookCleared = true;
            app.logger.info('bot: polling for updates (this process holds the lease)');
          }
          abort = new AbortController();
          // Confirmed: everything before the oldest update still in hand (or everything taken).
          const updates = await api.getUpdates(
            {
              offset: inHand.offset(next),
              timeout: inHand.size() > 0 ? 0 : POLL_TIMEOUT_S,
              allowed_updates: [...ALLOWED_UPDATES],
            },
            abort.signal as Parameters<Api['getUpdates']>[1],
          );
          const receivedAt = app.clock.now();
          failures = 0;
          let taken = 0;
          for (const update of updates) {
            if (stopped || !holding) break;
            if (update.update_id < next || inHand.has(update.update_id)) continue;
            const { done } = await receive(update, receivedAt);
            next = update.update_id + 1;
            taken += 1;
            inHand.add(update.update_id, done);
          }
          if (taken === 0 && inHand.size() > 0) await inHand.oneHandled();
        } catch (err) {
          if (stopped || !holding) continue;
          failures += 1;
          app.logger.warn({ err: errorInfo(err) }, 'bot: getUpdates failed; retrying');
          await sleep(Math.min(30_000, 500 * 2 ** Math.min(failures, 6)));
        } finally {
          abort = null;
        }
      }
    } finally {
      clearInterval(renew);
    }
  })();

  return {
    polling: () => holding,
    async stop() {
      stopped = true;
      abort?.abort();
      wake?.();
      await run.catch(() => undefined);
      await inHand.all();
      if (holding) await releasePollLease(app.db, botId, INSTANCE_ID).catch(() => undefined);
      holding = false;
    },
  };
}
