// The operator's view of a customer's webhook events (docs/reference/webhooks-and-events.md#the-event-log): the same log as the
// merchant's GET /v1/events, for either mode, one event in full, and a redelivery.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { customerExists } from '../../core/accounts/accounts.ts';
import type { AppContext } from '../../core/context.ts';
import { ApiError } from '../../core/errors.ts';
import { merchantHealth } from '../../core/requests/merchant-health.ts';
import { getEvent, listEvents } from '../../core/webhooks/event-log.ts';
import { listEventsAcrossCustomers, receiversOf } from '../../core/webhooks/event-overview.ts';
import { requestRedeliveryAs } from '../../core/webhooks/redelivery.ts';
import { removeWebhook } from '../../core/webhooks/registration.ts';
import { actorOf } from '../../http/admin-door.ts';
import { eventFilterFields } from '../events.ts';
import { customerIdQuery, parseQuery } from './query.ts';
import { customerIdParam, modeSchema } from './validation.ts';

const adminEventsQuery = z.strictObject({ mode: modeSchema.optional(), ...eventFilterFields });
const eventsAcrossQuery = z.strictObject({
  mode: modeSchema.optional(),
  customer_id: customerIdQuery.optional(),
  ...eventFilterFields,
});

export function registerAdminEventRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get<{ Params: { id: string } }>('/admin/v1/customers/:id/events', async (request) => {
    const customerId = customerIdParam(request.params.id);
    if (!(await customerExists(ctx.db, customerId))) throw new ApiError('not_found', 'unknown customer');
    const q = parseQuery(adminEventsQuery, request.query);
    const page = await listEvents(ctx.db, {
      customerId,
      mode: q.mode ?? null,
      state: q.state,
      type: q.type,
      jobId: q.job_id,
      cursor: q.cursor,
      limit: q.limit,
    });
    return { ok: true, request_id: request.id, customer_id: customerId, ...page };
  });

  // Every customer's events at once: the console's Webhooks page asks for state=failed.
  app.get('/admin/v1/events', async (request) => {
    const q = parseQuery(eventsAcrossQuery, request.query);
    const page = await listEventsAcrossCustomers(ctx.db, {
      customerId: q.customer_id ?? null,
      mode: q.mode ?? null,
      state: q.state,
      type: q.type,
      jobId: q.job_id,
      cursor: q.cursor,
      limit: q.limit,
    });
    return { ok: true, request_id: request.id, ...page };
  });

  app.get<{ Params: { id: string } }>('/admin/v1/customers/:id/webhooks', async (request) => {
    const customerId = customerIdParam(request.params.id);
    if (!(await customerExists(ctx.db, customerId))) throw new ApiError('not_found', 'unknown customer');
    const webhooks = await receiversOf(ctx.db, customerId, ctx.clock);
    return { ok: true, request_id: request.id, customer_id: customerId, window_hours: 24, webhooks };
  });

  // Removes the customer's webhook of one mode (the public API has no way to: POST /v1/webhook
  // needs a url). Audited as webhook.remove; nothing registered → 404.
  app.delete<{ Params: { id: string; mode: string } }>(
    '/admin/v1/customers/:id/webhooks/:mode',
    async (request) => {
      const customerId = customerIdParam(request.params.id);
      const mode = modeSchema.safeParse(request.params.mode);
      if (!mode.success) throw new ApiError('bad_request', 'mode: must be live or test');
      if (!(await customerExists(ctx.db, customerId))) throw new ApiError('not_found', 'unknown customer');
      const removed = await removeWebhook(ctx.db, ctx.clock, actorOf(request), {
        customerId,
        mode: mode.data,
      });
      if (!removed) throw new ApiError('not_found', `no ${mode.data} webhook is registered`);
      return {
        ok: true,
        request_id: request.id,
        customer_id: customerId,
        mode: mode.data,
        removed: removed.url,
      };
    },
  );

  // A merchant's health, live and test side by side (the customer page's first section).
  app.get<{ Params: { id: string } }>('/admin/v1/customers/:id/health', async (request) => {
    const customerId = customerIdParam(request.params.id);
    if (!(await customerExists(ctx.db, customerId))) throw new ApiError('not_found', 'unknown customer');
    const health = await merchantHealth(ctx.db, customerId, ctx.clock);
    return { ok: true, request_id: request.id, customer_id: customerId, window_hours: 24, ...health };
  });

  app.get<{ Params: { id: string } }>('/admin/v1/events/:id', async (request) => {
    const event = await getEvent(ctx.db, ctx.codeKey, null, request.params.id);
    if (!event) throw new ApiError('not_found', 'unknown event');
    return { ok: true, request_id: request.id, ...event };
  });

  app.post<{ Params: { id: string } }>('/admin/v1/events/:id/redeliver', async (request, reply) => {
    const r = await requestRedeliveryAs(ctx, actorOf(request), request.params.id);
    ctx.webhooks?.wake();
    reply.code(202);
    return { ok: true, request_id: request.id, event_id: r.eventId };
  });
}
