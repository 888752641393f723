// Updates POSTed to the bot's webhook as Telegram sends them: JSON, with the secret in
// X-Telegram-Bot-Api-Secret-Token, several at once (up to max_connections) but one at a time per
// chat and in order, each retried a few times when the answer is not 2xx or the connection fails
// (Telegram retries too, then moves on).
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiError } from './api-error.ts';
import { type Update, updateKind } from './telegram-objects.ts';
import type { Queued, UpdateQueue } from './update-queue.ts';

/** Waits between attempts; after the last the update is dropped (counted in last_error_*). */
const RETRY_DELAYS_MS = [200, 500, 1000, 2000];
const TIMEOUT_MS = 10_000;

const now = () => Math.floor(Date.now() / 1000);

export interface Webhook {
  url: string;
  secret?: string;
}

export async function deliverUpdate(
  hook: Webhook,
  update: unknown,
  opts: { stillWanted: () => boolean; failed: (message: string) => void },
): Promise<boolean> {
  for (let attempt = 0; ; attempt++) {
    try {
      const res = await fetch(hook.url, {
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(hook.secret ? { 'x-telegram-bot-api-secret-token': hook.secret } : {}),
        },
        body: JSON.stringify(update),
        signal: AbortSignal.timeout(TIMEOUT_MS),
      });
      await res.arrayBuffer();
      if (res.ok) return true;
      opts.failed(`Wrong response from the webhook: ${res.status} ${res.statusText}`);
    } catch (err) {
      opts.failed(`Connection failed: ${(err as Error).message}`);
    }
    const delay = RETRY_DELAYS_MS[attempt];
    if (delay === undefined || !opts.stillWanted()) return false;
    await sleep(delay);
  }
}

/** The chat an update belongs to (its person's, for a query), so one chat's go in order. */
function chatOf(u: Update): string {
  const body = u[updateKind(u)] as
    | { chat?: { id?: unknown }; message?: { chat?: { id?: unknown } }; from?: { id?: unknown } }
    | undefined;
  const id = body?.chat?.id ?? body?.message?.chat?.id ?? body?.from?.id;
  return id === undefined ? `update ${u.update_id}` : String(id);
}

/** The webhook setWebhook set, and the delivery of the queue's updates to it. */
export class WebhookDelivery {
  /** The webhook set with setWebhook, if any. */
  target: Webhook | undefined;
  lastError: { date: number; message: string } | undefined;
  /** How many updates are POSTed at once (setWebhook's max_connections; Telegram's default 40). */
  maxConnections = 40;
  /** Updates being POSTed now, and the chats they are for: one at a time per chat. */
  private readonly inFlight = new Set<Queued>();
  private readonly busyChats = new Set<string>();
  private closed = false;

  constructor(private readonly queue: UpdateQueue) {}

  /** setWebhook: a waiting getUpdates ends with 409, and what is queued goes to the webhook. */
  set(url: string, secret: string | undefined, dropPending: boolean, maxConnections = 40): void {
    this.target = { url, ...(secret ? { secret } : {}) };
    this.maxConnections = maxConnections;
    this.lastError = undefined;
    if (dropPending) this.queue.drop();
    this.queue.endPoll(new ApiError(409, 'Conflict: terminated by setWebhook request'));
    this.pump();
  }

  /** deleteWebhook: updates stay queued for getUpdates unless dropped. */
  delete(dropPending: boolean): void {
    this.target = undefined;
    if (dropPending) this.queue.drop();
  }

  close(): void {
    this.closed = true;
  }

  /**
   * Delivers queued updates to the webhook as Telegram does, several at once (up to
   * maxConnections) so one slow chat does not hold up the others, but one at a time per chat and
   * in order, each retried a few times.
   */
  pump(): void {
    const hook = this.target;
    if (!hook || this.closed) return;
    for (const entry of this.queue.entries) {
      if (this.inFlight.size >= this.maxConnections) break;
      const chat = chatOf(entry.update);
      if (this.inFlight.has(entry) || this.busyChats.has(chat)) continue;
      this.inFlight.add(entry);
      this.busyChats.add(chat);
      void this.deliver(hook, entry, chat);
    }
  }

  private async deliver(hook: Webhook, entry: Queued, chat: string): Promise<void> {
    const delivered = await deliverUpdate(hook, entry.update, {
      stillWanted: () => !this.closed && this.target === hook,
      failed: (message) => {
        this.lastError = { date: now(), message };
      },
    });
    this.inFlight.delete(entry);
    this.busyChats.delete(chat);
    // A webhook changed or removed meanwhile keeps the update queued for what comes next.
    if (delivered || this.target === hook) this.queue.remove(entry);
    this.pump();
  }
}
