// GET /admin/v1/jobs: jobs (sync and async) newest first, filtered by customer, mode, status and
// creation time, a page at a time. GET /admin/v1/jobs/{id} (jobs.ts) shows one in full.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { jobsCsv } from '../../core/accounts/admin-exports.ts';
import { listJobs } from '../../core/accounts/admin-lists.ts';
import type { AppContext } from '../../core/context.ts';
import { ApiError } from '../../core/errors.ts';
import { JOB_STATUSES } from '../../core/vocabulary.ts';
import { formatParam, sendCsv, wantsCsv } from './csv.ts';
import { cursorParam, customerIdQuery, isoQuery, limitParam, parseQuery } from './query.ts';
import { modeSchema } from './validation.ts';

const jobCursor = cursorParam((p) => {
  if (p.length !== 2 || typeof p[0] !== 'string' || typeof p[1] !== 'string') return null;
  const createdAt = new Date(p[0]);
  return Number.isNaN(createdAt.getTime()) ? null : { createdAt, id: p[1] };
});

const jobsQuery = z.strictObject({
  customer_id: customerIdQuery.optional(),
  mode: modeSchema.optional(),
  status: z.enum(JOB_STATUSES).optional(),
  // A player id as POST /v1/redeem takes it (docs/reference/redeem.md#the-request: 5 to 20 digits).
  player_id: z
    .string()
    .regex(/^\d{5,20}$/, 'must be a player id (5 to 20 digits)')
    .optional(),
  from: isoQuery.optional(),
  to: isoQuery.optional(),
  cursor: jobCursor.optional(),
  limit: limitParam(200, 50),
  ...formatParam,
});

export function registerAdminJobListRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get('/admin/v1/jobs', async (request, reply) => {
    const q = parseQuery(jobsQuery, request.query);
    if (q.from && q.to && q.from.getTime() >= q.to.getTime())
      throw new ApiError('bad_request', 'from: must be before to');
    if (wantsCsv(request, q.format)) {
      // Every job the filters select (a cursor or limit is the JSON list's paging, not a filter).
      const { csv, truncated } = await jobsCsv(ctx.db, {
        customerId: q.customer_id,
        mode: q.mode,
        status: q.status,
        from: q.from,
        to: q.to,
      });
      return sendCsv(reply, 'jobs.csv', csv, truncated);
    }
    const page = await listJobs(ctx.db, {
      customerId: q.customer_id,
      mode: q.mode,
      status: q.status,
      playerId: q.player_id,
      from: q.from,
      to: q.to,
      after: q.cursor,
      limit: q.limit,
    });
    return { ok: true, request_id: request.id, ...page };
  });
}
