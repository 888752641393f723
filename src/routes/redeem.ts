// POST /v1/redeem (docs/reference/redeem.md#validation-order): validation in the documented order, then one call into
// core (core/redeem/answer.ts). The key's re-check and its burst slot are taken by that call's
// first statement; a request refused before it gets them from KeyChecks.settle first.
import type { FastifyInstance, FastifyReply } from 'fastify';
import type { AppContext } from '../core/context.ts';
import { ApiError } from '../core/errors.ts';
import { answerRedeem, type RedeemAnswer, type RedeemInput } from '../core/redeem/answer.ts';
import { checkIdempotencyKey, parseRedeemRequest, requestFingerprint } from '../core/redeem/request.ts';
import { setAccountHeaders, setRateLimitHeaders } from '../http/headers.ts';
import { type KeyChecks, keyPassedInStatement, requestKeyFacts } from '../http/key-checks.ts';
import { assertStorableInput } from '../http/storable-input.ts';

export function registerRedeemRoutes(app: FastifyInstance, ctx: AppContext, keyChecks: KeyChecks) {
  app.post(
    '/v1/redeem',
    {
      config: {
        auth: 'redeem',
        burstLimit: true,
        burstInStatement: true,
        keyCheckedInStatement: true,
        lateJsonCheck: true,
      },
    },
    async (request, reply) => {
      let input: Omit<RedeemInput, 'checks'>;
      try {
        const idempotencyKey = checkIdempotencyKey(request.headers['idempotency-key']);
        if (request.invalidJson) throw new ApiError('bad_request', 'body is not valid JSON');
        const parsed = parseRedeemRequest(request.body);
        // The input rule of every route, after the documented order of the redeem checks.
        assertStorableInput(request);
        input = {
          idempotencyKey,
          request: parsed,
          fingerprint: requestFingerprint('POST', '/v1/redeem', request.body),
          requestId: request.id,
        };
      } catch (err) {
        // Authentication and the burst limit come before these answers (docs/reference/redeem.md#the-request).
        await keyChecks.settle(request, reply);
        throw err;
      }
      const facts = requestKeyFacts(request);
      const caller = { customerId: facts.customerId, mode: facts.mode };
      const checks = () => ({
        keyId: facts.id,
        recheckKey: request.auth === null,
        burst: request.burstPending,
      });
      let answer = await answerRedeem(ctx, caller, { ...input, checks: checks() });
      if (answer.kind === 'recheck') {
        // Revoked or disabled since this process cached the key: answered in the documented order.
        await keyChecks.identify(request, reply);
        answer = await answerRedeem(ctx, caller, { ...input, checks: checks() });
        if (answer.kind === 'recheck')
          throw new Error('a key passed authentication, then failed its re-check');
      }
      keyPassedInStatement(request);
      if (answer.kind === 'result' || answer.kind === 'accepted') request.loggedJobId = answer.jobId;
      if (answer.kind === 'accepted' && !answer.replay) ctx.jobs.wake();
      return send(reply, answer);
    },
  );
}

function send(reply: FastifyReply, answer: Exclude<RedeemAnswer, { kind: 'recheck' }>) {
  if (answer.burst) setRateLimitHeaders(reply, answer.burst);
  if (answer.account) setAccountHeaders(reply, answer.account);
  switch (answer.kind) {
    case 'refused':
      throw answer.error;
    case 'accepted':
      // SVC-Cost stays 0 on a 202: the job's result carries the billing.
      if (answer.replay) reply.header('SVC-Idempotent-Replay', 'true');
      reply.header('X-Request-Id', answer.requestId);
      reply.header('Location', `/v1/jobs/${answer.jobId}`);
      return reply
        .code(202)
        .send({ ok: true, request_id: answer.requestId, job_id: answer.jobId, status: 'queued' });
    case 'result':
      if (answer.replay) {
        reply.header('SVC-Idempotent-Replay', 'true');
        reply.header('X-Request-Id', answer.requestId);
      }
      reply.header('SVC-Cost', String(answer.billed));
      return reply.code(answer.status).send(answer.body);
  }
}
