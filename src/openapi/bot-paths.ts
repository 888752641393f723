// POST /bot/updates (docs/reference/bot.md#running-the-bot): Telegram's webhook delivery of the chat bot's updates, on the
// public listener, authenticated by Telegram's secret header instead of an API key.
import { errorResponses, headersFor, json, type Op } from './operations.ts';

const botUpdatesOp: Op = { auth: false, errors: ['unauthorized', 'not_found', 'payload_too_large'] };

export function botPaths() {
  return {
    '/bot/updates': {
      post: {
        operationId: 'botUpdates',
        tags: ['Service'],
        summary: "The chat bot's updates, delivered by Telegram (BOT_UPDATES=webhook)",
        description:
          'Accepted only with `X-Telegram-Bot-Api-Secret-Token` equal to BOT_WEBHOOK_SECRET (otherwise 401, ' +
          'nothing processed). The update is acted on at most once (by its `update_id`) before the answer. ' +
          '404 when the bot is off or polls. 400 bad_request for a body that is not an update where the bot ' +
          'reads it (no integer `update_id`; a message that is not an object or lacks its chat; a callback ' +
          'query without its sender), nothing acted on.',
        security: [{ telegramSecret: [] }],
        requestBody: {
          required: true,
          content: json({
            type: 'object',
            required: ['update_id'],
            properties: { update_id: { type: 'integer' } },
            description: "A Telegram Update object (Telegram's Bot API reference).",
          }),
        },
        responses: {
          '200': {
            description: 'Acted on (or acted on before).',
            headers: headersFor(botUpdatesOp, 200),
            content: json({
              type: 'object',
              required: ['ok', 'request_id'],
              properties: { ok: { const: true }, request_id: { type: 'string' } },
            }),
          },
          ...errorResponses(botUpdatesOp),
        },
      },
    },
  };
}
