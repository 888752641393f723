// The operator's view of quarantined codes: list them, run a status check now, or settle one by
// hand after checking it some other way (contract section 3 "quarantined"; core/quarantine.ts).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  checkQuarantined,
  listQuarantined,
  quarantinedView,
  settleQuarantined,
} from '../../core/billing/quarantine.ts';
import type { AppContext } from '../../core/context.ts';
import { ApiError } from '../../core/errors.ts';
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
      const codes = await listQuarantined(ctx.db, { customerId, mode: parsedMode?.data });
      return { ok: true, request_id: request.id, codes: codes.map(quarantinedView) };
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
