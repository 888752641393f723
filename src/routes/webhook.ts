// POST /v1/webhook (docs/reference/webhooks-and-events.md#registration): registers or replaces the caller's webhook for its
// key's mode. Not billed. There is no GET: the secret is shown only in this answer.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../core/context.ts';
import { registerWebhook, SIGNATURE_NOTE } from '../core/webhooks/registration.ts';

export function registerWebhookRoutes(app: FastifyInstance, ctx: AppContext) {
  app.post('/v1/webhook', { config: { auth: 'redeem', customerLimit: 'webhook' } }, async (request) => {
    const key = request.auth!;
    const { url, secret } = await registerWebhook(
      {
        db: ctx.db,
        clock: ctx.clock,
        codeKey: ctx.codeKey,
        allowPrivate: ctx.config.WEBHOOK_ALLOW_PRIVATE_TARGETS,
      },
      { customerId: key.customerId, mode: key.mode },
      request.body,
    );
    return { ok: true, request_id: request.id, url, secret, note: SIGNATURE_NOTE };
  });
}
