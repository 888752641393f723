// Long polling with one poller across processes (contract 14.1): a process polls getUpdates only
// while it holds the lease in the database (core/bot/poll-lease.ts), renewing it as it goes; the
// others try to take it every few seconds, so when the poller stops or dies another takes over
// within LEASE_TTL_MS + TAKE_EVERY_MS (under 30 s). Updates are acted on one at a time, in order;
// a redelivered one is dropped by its update_id (the gate), so a takeover that reads updates the
// last poller had not confirmed acts on none twice.
//
// Why not @grammyjs/runner: it polls unconditionally and concurrently; a lease must be able to
// stop the poll at once (an abort of the long poll in flight), which a short loop over grammY's own
// getUpdates does plainly.
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
export const ALLOWED_UPDATES = ['message', 'callback_query', 'pre_checkout_query'] as const;

/** The chat (or, for a pre-checkout, the person) an update belongs to. */
function chatOf(u: Update): number | undefined {
  return (
    u.message?.chat.id ??
    u.callback_query?.message?.chat.id ??
    u.callback_query?.from.id ??
    u.pre_checkout_query?.from.id
  );
}

export interface Poller {
  /** Whether this process polls now. */
  polling(): boolean;
  stop(): Promise<void>;
}

export function startPolling(
  app: ServerContext,
  api: Api,
  botId: number,
  handle: (update: Update) => Promise<void>,
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

  const run = (async () => {
    let offset: number | undefined;
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
          const updates = await api.getUpdates(
            { offset, timeout: POLL_TIMEOUT_S, allowed_updates: [...ALLOWED_UPDATES] },
            abort.signal as Parameters<Api['getUpdates']>[1],
          );
          failures = 0;
          // In order within a chat, chats side by side: one busy chat (its replies paced at one a
          // second) does not hold the others up.
          const byChat = new Map<number | string, Update[]>();
          for (const update of updates) {
            const key = chatOf(update) ?? `u${update.update_id}`;
            byChat.set(key, [...(byChat.get(key) ?? []), update]);
          }
          await Promise.all(
            [...byChat.values()].map(async (chat) => {
              for (const update of chat) if (!stopped && holding) await handle(update);
            }),
          );
          const last = updates.at(-1);
          if (last && !stopped && holding) offset = last.update_id + 1;
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
      if (holding) await releasePollLease(app.db, botId, INSTANCE_ID).catch(() => undefined);
      holding = false;
    },
  };
}
