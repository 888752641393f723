// The bot's queue of updates as Telegram keeps it: numbered in order, kept until confirmed by a
// later getUpdates offset (or delivered to the webhook), redelivered on demand, and handed out
// by long polling: a getUpdates with a timeout waits for the first update to arrive.
import { ApiError } from './api-error.ts';
import { type Json, type Update, updateKind } from './telegram-objects.ts';

/** An update waiting to be handed out. */
export interface Queued {
  update: Update;
  /** A copy queued again by redeliver(): delivered once more whatever the offset, then gone. */
  redelivery: boolean;
}

interface Poller {
  limit: number;
  finish(answer: Update[] | ApiError): void;
}

/** The webhook side of the queue: whether one is set, and how to hand it what is queued. */
export interface WebhookSide {
  webhookActive(): boolean;
  pushToWebhook(): void;
}

export class UpdateQueue {
  private pending: Queued[] = [];
  private readonly history = new Map<number, Update>();
  private nextUpdateId: number;
  /** The highest offset a getUpdates has confirmed (every update below it is gone). */
  confirmedOffset = 0;
  private allowedUpdates: string[] | undefined;
  private poller: Poller | undefined;
  /** True while pushMany() queues: the updates are handed out together once all are queued. */
  private holdWake = false;

  constructor(
    firstUpdateId: number,
    private readonly webhook: WebhookSide,
  ) {
    this.nextUpdateId = firstUpdateId;
  }

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

  /** What is queued, oldest first (redelivered copies before the rest), for the webhook. */
  get entries(): readonly Queued[] {
    return this.pending;
  }

  /** Forgets one entry (delivered to the webhook, or given up on). */
  remove(entry: Queued): void {
    this.pending = this.pending.filter((q) => q !== entry);
  }

  /** Forgets everything queued (drop_pending_updates). */
  drop(): void {
    this.pending = [];
  }

  /** Ends the waiting poll, if one waits, with this answer. */
  endPoll(answer: Update[] | ApiError): void {
    this.poller?.finish(answer);
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
    if (this.webhook.webhookActive()) this.webhook.pushToWebhook();
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
    if (this.webhook.webhookActive())
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
}
