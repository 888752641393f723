// GET /v1/jobs/{id} (contract section 4): any state of an async job of the caller's customer and
// mode; every other id is 404 (no existence leak). Not billed.
import type { FastifyInstance } from 'fastify';
import { jobView } from '../core/job-view.ts';
import { loadJob, loadJobCodes } from '../core/jobs.ts';
import type { AppContext } from '../http/context.ts';
import { ApiError } from '../http/errors.ts';

export function registerJobRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get<{ Params: { id: string } }>(
    '/v1/jobs/:id',
    { config: { auth: ['read', 'redeem'] } },
    async (request, reply) => {
      const key = request.auth!;
      const id = request.params.id;
      const job = /^job_[A-Za-z0-9]{20,64}$/.test(id) ? await loadJob(ctx.db, id) : null;
      if (!job?.isAsync || job.customerId !== key.customerId || job.mode !== key.mode) {
        throw new ApiError('not_found', 'unknown job');
      }
      if (job.status === 'queued' || job.status === 'running') reply.header('Retry-After', '1');
      return jobView(job, await loadJobCodes(ctx.db, job.id), ctx.codeKey, request.id);
    },
  );
}
