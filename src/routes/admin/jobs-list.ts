// GET /admin/v1/jobs: jobs (sync and async) newest first, filtered by customer, mode, status and
// creation time, a page at a time. GET /admin/v1/jobs/{id} (jobs.ts) shows one in full.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { listJobs } from '../../core/accounts/admin-lists.ts';
import type { AppContext } from '../../core/context.ts';
import { ApiError } from '../../core/errors.ts';
import { JOB_STATUSES } from '../../core/vocabulary.ts';
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
  from: isoQuery.optional(),
  to: isoQuery.optional(),
  cursor: jobCursor.optional(),
  limit: limitParam(200, 50),
});

export function registerAdminJobListRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get('/admin/v1/jobs', async (request) => {
    const q = parseQuery(jobsQuery, request.query);
    if (q.from && q.to && q.from.getTime() >= q.to.getTime())
      throw new ApiError('bad_request', 'from: must be before to');
    const page = await listJobs(ctx.db, {
      customerId: q.customer_id,
      mode: q.mode,
      status: q.status,
      from: q.from,
      to: q.to,
      after: q.cursor,
      limit: q.limit,
    });
    return { ok: true, request_id: request.id, ...page };
  });
}
