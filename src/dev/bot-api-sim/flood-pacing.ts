// Telegram's flood limits on the bot's sends, when a test switches them on: too many messages to
// one chat, or overall, in a window are refused with 429 and the seconds to wait (retry_after).
import { ApiError } from './api-error.ts';

export interface FloodLimits {
  /** At most `messages` sends to one chat in any `windowMs` (Telegram: about 1 a second). */
  perChat: { messages: number; windowMs: number };
  /** At most `messages` sends overall in any `windowMs` (Telegram: about 30 a second). */
  overall: { messages: number; windowMs: number };
}

/** About 1 message a second per chat and 30 a second overall, as Telegram documents its limits. */
export const TELEGRAM_FLOOD_LIMITS: FloodLimits = {
  perChat: { messages: 1, windowMs: 1000 },
  overall: { messages: 30, windowMs: 1000 },
};

export class FloodPacer {
  /** Optional per-chat and overall send limits, answered with 429 as Telegram does. */
  private limits: FloodLimits | undefined;
  /** The times of the bot's recent sends, per chat and overall, for the limits. */
  private readonly lastSend = new Map<number, number[]>();
  private recentSends: number[] = [];

  /** Sets the limits (undefined: none); sends count from here on, under the new limits. */
  setLimits(limits: FloodLimits | undefined): void {
    this.limits = limits;
    this.lastSend.clear();
    this.recentSends = [];
  }

  /**
   * Counts one message the bot sends to the chat, or refuses it with Telegram's 429 and the
   * seconds to wait when limits are on and the chat or the bot as a whole sent too many.
   */
  countSend(chatId: number): void {
    const limits = this.limits;
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
}
