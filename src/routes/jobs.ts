// GET /v1/jobs/{id} (docs/reference/jobs.md#the-job-record): any state of an async job of the caller's customer and
// mode; every other id is 404 (no existence leak). Not billed. One statement answers it: the job
// with its codes, the key's revocation and the customer's account (so a key cached by the auth
// hook is checked again here, and the quota headers come from the same row). The read budget
// (docs/reference/limits.md#read-budget) is counted before, in memory (core/limits/read-budget.ts).
import type { FastifyInstance } from 'fastify';
import { accountStateFrom, today } from '../core/accounts/accounts.ts';
import type { AppContext } from '../core/context.ts';
import { ApiError } from '../core/errors.ts';
import { loadKeyJob } from '../core/jobs/jobs.ts';
import { jobView } from '../core/redeem/job-view.ts';
import type { ScopeRule } from '../http/auth.ts';
import { acceptKeyCheckedInStatement, requestKeyFacts } from '../http/key-checks.ts';

const SCOPES: ScopeRule = ['read', 'redeem'];

export function registerJobRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get<{ Params: { id: string } }>(
    '/v1/jobs/:id',
    { config: { auth: SCOPES, keyCheckedInStatement: true, readLimit: true } },
    async (request, reply) => {
      const facts = requestKeyFacts(request);
      const id = request.params.id;
      const found = await loadKeyJob(
        ctx.db,
        facts,
        /^job_[A-Za-z0-9]{20,64}$/.test(id) ? id : null,
        today(ctx.clock),
      );
      const { job, codes } = acceptKeyCheckedInStatement(
        request,
        reply,
        found && { ...found, state: accountStateFrom(facts.customerId, found.account) },
        SCOPES,
        ctx.clock,
      );
      if (!job) throw new ApiError('not_found', 'unknown job');
      if (job.status === 'queued' || job.status === 'running') reply.header('Retry-After', '1');
      return jobView(job, codes, ctx.codeKey, request.id);
    },
  );
}
