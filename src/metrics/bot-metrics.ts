// The chat bot's series (docs/reference/bot.md#running-the-bot): updates by kind, replies sent, and Bot API errors by
// method. Kinds and methods are closed sets (Telegram's update fields and the methods the bot
// calls), never a user, chat or text.
import { Counter, type Registry } from 'prom-client';

export interface BotMetrics {
  /** One update received, by kind (message, callback_query, pre_checkout_query, …) and what became of it. */
  update(kind: string, result: 'acted' | 'ignored' | 'duplicate' | 'limited'): void;
  /** One message sent or edited by the bot. */
  reply(method: string): void;
  /** One Bot API call that failed (after its retries). */
  apiError(method: string, code: number): void;
}

export function registerBotMetrics(registers: Registry[], prefix: string): BotMetrics {
  const updates = new Counter({
    name: `${prefix}bot_updates_total`,
    help: 'Chat bot updates received, by kind and result (acted, ignored, duplicate, limited)',
    labelNames: ['kind', 'result'] as const,
    registers,
  });
  const replies = new Counter({
    name: `${prefix}bot_replies_total`,
    help: 'Messages the chat bot sent or edited, by Bot API method',
    labelNames: ['method'] as const,
    registers,
  });
  const errors = new Counter({
    name: `${prefix}bot_api_errors_total`,
    help: 'Bot API calls that failed after their retries, by method and error code (0: no answer)',
    labelNames: ['method', 'code'] as const,
    registers,
  });
  return {
    update: (kind, result) => updates.inc({ kind, result }),
    reply: (method) => replies.inc({ method }),
    apiError: (method, code) => errors.inc({ method, code: String(code) }),
  };
}
