// POST /bot/updates (docs/reference/bot.md#running-the-bot): Telegram's webhook delivery of one update, accepted only with
// X-Telegram-Bot-Api-Secret-Token equal to BOT_WEBHOOK_SECRET (compared in constant time). The
// update is acted on before the answer (at most once, by its update_id), so a 200 means done and
// Telegram's retry of an unanswered delivery finds it done.
import { timingSafeEqual } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { isUpdateShape } from '../bot/update-shape.ts';
import { ApiError } from '../core/errors.ts';
import type { ServerContext } from '../http/context.ts';

const sameSecret = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

export function registerBotUpdateRoutes(app: FastifyInstance, ctx: ServerContext) {
  app.post('/bot/updates', async (request) => {
    const bot = ctx.bot;
    const secret = ctx.config.BOT_WEBHOOK_SECRET;
    if (bot?.updates !== 'webhook' || !secret) throw new ApiError('not_found', 'no bot webhook here');
    const given = request.headers['x-telegram-bot-api-secret-token'];
    if (typeof given !== 'string' || !sameSecret(given, secret))
      throw new ApiError('unauthorized', 'missing or wrong X-Telegram-Bot-Api-Secret-Token');
    const update = request.body as Record<string, unknown> | null;
    if (typeof update !== 'object' || update === null || !Number.isSafeInteger(update.update_id))
      throw new ApiError('bad_request', 'the body must be a Telegram update with an integer update_id');
    // A body of another shape where the bot reads it (a "message" that is a number, a message
    // without its chat) is refused here, not a TypeError in the bot's door (a 500).
    if (!isUpdateShape(update))
      throw new ApiError('bad_request', 'the body is not a Telegram update the bot can read');
    await bot.handleUpdate(update);
    return { ok: true, request_id: request.id };
  });
}
