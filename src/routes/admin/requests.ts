// GET /admin/v1/requests: the request log, refused and failed public API answers newest first,
// filtered by customer (id, or `customer` an id or a name), mode, status (exact, or 4xx / 5xx), error
// code, request id, player id and time (`since`, or one UTC `day`: YYYY-MM-DD or `today`), with the
// matching rows counted by error code above the page.
// GET /admin/v1/lookup?q=: what an id names (a request, job, event or player id).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../core/context.ts';
import { lookupId } from '../../core/requests/lookup.ts';
import { countRequestLog, listRequestLog } from '../../core/requests/request-log.ts';
import { cursorParam, customerIdQuery, isoQuery, limitParam, parseQuery } from './query.ts';
import { modeSchema } from './validation.ts';

const requestCursor = cursorParam((p) => {
  if (p.length !== 2 || typeof p[0] !== 'string' || !Number.isSafeInteger(p[1])) return null;
  const at = new Date(p[0]);
  return Number.isNaN(at.getTime()) ? null : { at, id: p[1] as number };
});

/** `404`, or `4xx` / `5xx` for a class. */
const statusQuery = z
  .string()
  .regex(/^([45]\d\d|[45]xx)$/, 'must be a status from 400 to 599, or 4xx or 5xx')
  .transform((s) => (s.endsWith('xx') ? { class: Number(s[0]) as 4 | 5 } : { exact: Number(s) }));

const requestsQuery = z.strictObject({
  customer_id: customerIdQuery.optional(),
  status: statusQuery.optional(),
  error_code: z
    .string()
    .regex(/^[a-z_]{1,64}$/, 'must be an error_code')
    .optional(),
  mode: modeSchema.optional(),
  request_id: z
    .string()
    .regex(/^req_[0-9A-Za-z]{1,64}$/, 'must be a request id (req_…)')
    .optional(),
  since: isoQuery.optional(),
  customer: z.string().trim().min(1, 'must not be empty').max(200, 'is too long').optional(),
  player_id: z
    .string()
    .regex(/^\d{5,20}$/, 'must be a player id (5 to 20 digits)')
    .optional(),
  day: z
    .string()
    .regex(/^(today|\d{4}-\d{2}-\d{2})$/, 'must be a day YYYY-MM-DD or today')
    .refine(
      (d) => d === 'today' || !Number.isNaN(Date.parse(`${d}T00:00:00Z`)),
      'must be a day YYYY-MM-DD or today',
    )
    .optional(),
  cursor: requestCursor.optional(),
  limit: limitParam(500, 50),
});

const lookupQuery = z.strictObject({ q: z.string().min(1, 'must not be empty').max(100, 'is too long') });

export function registerAdminRequestRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get('/admin/v1/requests', async (request) => {
    const q = parseQuery(requestsQuery, request.query);
    const day = q.day === 'today' ? ctx.clock.now().toISOString().slice(0, 10) : q.day;
    const dayStart = day ? new Date(`${day}T00:00:00Z`) : undefined;
    // `customer` is an id when it is digits, else a customer's name.
    const byId = q.customer !== undefined && /^\d{1,18}$/.test(q.customer);
    const filter = {
      customerId: q.customer_id ?? (byId ? Number(q.customer) : undefined),
      customerName: byId ? undefined : q.customer,
      status: q.status,
      errorCode: q.error_code,
      mode: q.mode,
      requestId: q.request_id,
      playerId: q.player_id,
      since: dayStart && (!q.since || dayStart > q.since) ? dayStart : q.since,
      before: dayStart ? new Date(dayStart.getTime() + 86_400_000) : undefined,
      limit: q.limit,
    };
    const [page, counts] = await Promise.all([
      listRequestLog(ctx.db, { ...filter, after: q.cursor }),
      countRequestLog(ctx.db, filter),
    ]);
    return { ok: true, request_id: request.id, day: day ?? null, counts, ...page };
  });

  app.get('/admin/v1/lookup', async (request) => {
    const q = parseQuery(lookupQuery, request.query);
    return { ok: true, request_id: request.id, q: q.q.trim(), ...(await lookupId(ctx.db, q.q)) };
  });
}
