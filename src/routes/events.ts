// The merchant's webhook event log (docs/reference/webhooks-and-events.md#the-event-log): GET /v1/events (newest first, filters,
// cursor paging), GET /v1/events/{id} (with the payload's data) and POST /v1/events/{id}/redeliver
// (one extra attempt, queued and sent by the webhook worker). The caller's customer and mode
// only: every other event is 404. Not billed.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../core/context.ts';
import { ApiError } from '../core/errors.ts';
import { EVENT_STATES } from '../core/vocabulary.ts';
import {
  EVENT_JOB_ID_FORMAT,
  EVENT_TYPE_FORMAT,
  getEvent,
  listEvents,
  parseEventCursor,
} from '../core/webhooks/event-log.ts';
import { requestRedelivery } from '../core/webhooks/redelivery.ts';
import type { ScopeRule } from '../http/auth.ts';
import { cursorParam, limitParam, parseQuery } from './admin/query.ts';

const READ: ScopeRule = ['read', 'redeem'];

/** The filters of both event lists (the operator's adds `mode`). */
export const eventFilterFields = {
  state: z.enum(EVENT_STATES).optional(),
  type: z.string().regex(EVENT_TYPE_FORMAT, 'must be an event type such as redeem.completed').optional(),
  job_id: z.string().regex(EVENT_JOB_ID_FORMAT, 'must be a job id').optional(),
  limit: limitParam(100, 20),
  cursor: cursorParam(parseEventCursor).optional(),
};

const eventsQuery = z.strictObject(eventFilterFields);

export function registerEventRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get('/v1/events', { config: { auth: READ, readLimit: true } }, async (request) => {
    const key = request.auth!;
    const q = parseQuery(eventsQuery, request.query);
    const page = await listEvents(ctx.db, {
      customerId: key.customerId,
      mode: key.mode,
      state: q.state,
      type: q.type,
      jobId: q.job_id,
      cursor: q.cursor,
      limit: q.limit,
    });
    return { ok: true, request_id: request.id, ...page };
  });

  app.get<{ Params: { id: string } }>(
    '/v1/events/:id',
    { config: { auth: READ, readLimit: true } },
    async (request) => {
      const key = request.auth!;
      const event = await getEvent(ctx.db, ctx.codeKey, key, request.params.id);
      if (!event) throw new ApiError('not_found', 'unknown event');
      return { ok: true, request_id: request.id, ...event };
    },
  );

  app.post<{ Params: { id: string } }>(
    '/v1/events/:id/redeliver',
    { config: { auth: 'redeem', customerLimit: 'redeliver' } },
    async (request, reply) => {
      const key = request.auth!;
      const r = await requestRedelivery(ctx.db, ctx.clock, key, request.params.id, 'merchant');
      ctx.webhooks?.wake();
      reply.code(202);
      return { ok: true, request_id: request.id, event_id: r.eventId };
    },
  );
}
