// The operator's view of quarantined codes: list them (and those settled in the last week, with
// how they settled), run a status check now, or settle one by hand after checking it some other
// way (docs/reference/redeem.md#dispositions "quarantined"; core/billing/quarantine.ts,
// core/sweeper/quarantine-check.ts).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  listQuarantined,
  listSettledQuarantine,
  QUARANTINE_SETTLED_DAYS,
  quarantinedView,
  settledView,
  settleQuarantined,
} from '../../core/billing/quarantine.ts';
import type { AppContext } from '../../core/context.ts';
import { ApiError } from '../../core/errors.ts';
import { checkQuarantined } from '../../core/sweeper/quarantine-check.ts';
import { actorOf } from '../../http/admin-door.ts';
import { customerIdParam, modeSchema, parseBody } from './validation.ts';

const settleBody = z.strictObject({ outcome: z.enum(['used', 'unused']) });

export function registerAdminQuarantineRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get<{ Querystring: { customer_id?: string; mode?: string } }>(
    '/admin/v1/quarantine',
    async (request) => {
      const { customer_id: customer, mode } = request.query;
      const parsedMode = mode === undefined ? undefined : modeSchema.safeParse(mode);
      if (parsedMode && !parsedMode.success) throw new ApiError('bad_request', 'mode: must be live or test');
      let customerId: number | undefined;
      if (customer !== undefined) {
        try {
          customerId = customerIdParam(customer);
        } catch {
          throw new ApiError('bad_request', 'customer_id: must be a customer id');
        }
      }
      const filter = { customerId, mode: parsedMode?.data };
      const [codes, settled] = await Promise.all([
        listQuarantined(ctx.db, filter),
        listSettledQuarantine(ctx.db, ctx.clock.now(), filter),
      ]);
      return {
        ok: true,
        request_id: request.id,
        codes: codes.map(quarantinedView),
        // Settled in the last week, newest first: how each settled, by what and whom, when.
        settled_days: QUARANTINE_SETTLED_DAYS,
        settled: settled.map(settledView),
      };
    },
  );

  app.post('/admin/v1/quarantine/check', async (request) => {
    if (
      request.body !== undefined &&
      (typeof request.body !== 'object' || request.body === null || Object.keys(request.body).length > 0)
    ) {
      throw new ApiError('bad_request', 'this endpoint takes no body');
    }
    const summary = await checkQuarantined(ctx, { all: true, limit: 500, actor: actorOf(request) });
    return { ok: true, request_id: request.id, ...summary };
  });

  app.post<{ Params: { jobId: string; position: string } }>(
    '/admin/v1/jobs/:jobId/codes/:position/settle',
    async (request) => {
      const body = parseBody(settleBody, request.body);
      const position = /^\d{1,3}$/.test(request.params.position) ? Number(request.params.position) : -1;
      const settled =
        position >= 0 &&
        (await settleQuarantined(
          ctx,
          { jobId: request.params.jobId, position },
          body.outcome,
          'operator',
          actorOf(request),
        ));
      if (!settled) throw new ApiError('not_found', 'no unsettled quarantined code at that job and position');
      return {
        ok: true,
        request_id: request.id,
        job_id: request.params.jobId,
        position,
        settlement: body.outcome,
      };
    },
  );
}
