// POST /v1/redeem (contract section 3): validation in the contract's order, then the phases of
// core/redeem.ts and core/redeem-run.ts. Sync redeems answer with the result; the key then replays it.
import type { FastifyInstance, FastifyReply } from 'fastify';
import { buildResult, loadJob, loadJobCodes } from '../core/jobs.ts';
import { settleStoppedJob } from '../core/recovery.ts';
import { startRedeem } from '../core/redeem.ts';
import { checkIdempotencyKey, parseRedeemRequest, requestFingerprint } from '../core/redeem-request.ts';
import { executeJob, finishSyncJob } from '../core/redeem-run.ts';
import type { AppContext } from '../http/context.ts';
import { ApiError, knownError } from '../http/errors.ts';

export function registerRedeemRoutes(app: FastifyInstance, ctx: AppContext) {
  app.post(
    '/v1/redeem',
    { config: { auth: 'redeem', burstLimit: true, lateJsonCheck: true } },
    async (request, reply) => {
      const idempotencyKey = checkIdempotencyKey(request.headers['idempotency-key']);
      if (request.invalidJson) throw new ApiError('bad_request', 'body is not valid JSON');
      const redeem = parseRedeemRequest(request.body);
      const key = request.auth!;
      const caller = { customerId: key.customerId, mode: key.mode };

      const started = await startRedeem(ctx, caller, {
        idempotencyKey,
        fingerprint: requestFingerprint('POST', '/v1/redeem', request.body),
        request: redeem,
        requestId: request.id,
      });
      if (started.kind === 'replay') {
        reply.header('SVC-Idempotent-Replay', 'true');
        reply.header('X-Request-Id', started.requestId);
        if (started.status === 202) return sendAccepted(reply, started.jobId, started.requestId);
        return sendResult(ctx, reply, started.jobId, started.status, started.requestId);
      }
      if (redeem.async) {
        ctx.jobs.wake();
        return sendAccepted(reply, started.jobId, request.id);
      }

      let billedNow: number;
      try {
        billedNow = await executeJob(ctx, started.jobId);
      } catch (err) {
        // The database stayed away: the run settles the job itself once its codes are recorded.
        if (err instanceof ApiError) throw err;
        request.log.error({ err, jobId: started.jobId }, 'redeem failed before finishing');
        await settleStoppedJob(ctx, started.jobId, 'failed').catch((e: unknown) =>
          request.log.error(
            { err: e, jobId: started.jobId },
            'could not settle the failed redeem; the sweeper will',
          ),
        );
        throw (
          knownError(err) ?? new ApiError('internal', 'internal error; retry with the same Idempotency-Key')
        );
      }
      const job = (await loadJob(ctx.db, started.jobId))!;
      const result = buildResult(job, await loadJobCodes(ctx.db, job.id), ctx.codeKey);
      const status = result.ok ? 200 : 422;
      await finishSyncJob(ctx, caller, job.id, status, request.id);
      reply.header('SVC-Cost', String(billedNow));
      return reply.code(status).send(resultBody(result, request.id));
    },
  );
}

/** The 202 of an async redeem; SVC-Cost stays 0, the job's result carries the billing. */
function sendAccepted(reply: FastifyReply, jobId: string, requestId: string) {
  reply.header('Location', `/v1/jobs/${jobId}`);
  return reply.code(202).send({ ok: true, request_id: requestId, job_id: jobId, status: 'queued' });
}

async function sendResult(
  ctx: AppContext,
  reply: FastifyReply,
  jobId: string,
  status: number,
  requestId: string,
) {
  const job = (await loadJob(ctx.db, jobId))!;
  const result = buildResult(job, await loadJobCodes(ctx.db, jobId), ctx.codeKey);
  return reply.code(status).send(resultBody(result, requestId));
}

/** `ok` and `request_id` first, as in the contract's example. */
function resultBody(result: ReturnType<typeof buildResult>, requestId: string) {
  const { ok, ...rest } = result;
  return { ok, request_id: requestId, ...rest };
}
