// POST /v1/redeem in one call: phase 1 (start.ts), then for a sync redeem its run and finish
// (run.ts), or the replay of an earlier answer. Everything after phase 1 comes back as an
// answer, refusals and failures too, with the key's burst window and account: every redeem
// answer carries RateLimit-* and the quota headers (docs/reference/limits.md#redeem-burst-limit, docs/reference/keys-and-modes.md#response-headers).

import type { AccountState } from '../accounts/accounts.ts';
import type { Caller, RedeemDeps } from '../context.ts';
import { ApiError, knownError } from '../errors.ts';
import { type JobCodeRow, loadJobCodes, loadJobWithCodes } from '../jobs/jobs.ts';
import { finishSyncJob } from '../jobs/states.ts';
import { buildResult } from './outcomes.ts';
import type { RedeemRequest } from './request.ts';
import { runSyncJob } from './run.ts';
import { settleStoppedJob } from './settle.ts';
import { startRedeem } from './start.ts';
import type { StartAnswer } from './start-result.ts';

export interface RedeemInput {
  idempotencyKey: string;
  fingerprint: string;
  request: RedeemRequest;
  requestId: string;
  checks: { keyId: string; recheckKey: boolean; burst: boolean };
}

export type RedeemAnswer =
  /** A cached key was revoked or its customer disabled: authenticate it again, then call again. */
  | { kind: 'recheck' }
  | ({ kind: 'refused'; error: ApiError } & StartAnswer)
  /** The 202 of an async redeem (`replay`: of an earlier request with the same key). */
  | ({ kind: 'accepted'; jobId: string; requestId: string; replay: boolean } & StartAnswer)
  | ({
      kind: 'result';
      status: number;
      body: Record<string, unknown>;
      replay: boolean;
      /** The request id the body carries (a replay's is the first request's). */
      requestId: string;
      /** Requests billed by this call (0 for a replay). */
      billed: number;
      /** The job the result is of (a sync answer's body does not name it; the request log does). */
      jobId: string;
    } & StartAnswer);

export async function answerRedeem(
  deps: RedeemDeps,
  caller: Caller,
  input: RedeemInput,
): Promise<RedeemAnswer> {
  const started = await startRedeem(deps, caller, input);
  if (started.kind === 'recheck') return started;
  const { burst, account } = started.answer;
  const headers = { burst, account };
  if (started.kind === 'refused') return { kind: 'refused', error: started.error, ...headers };
  if (started.kind === 'replay') {
    if (started.status === 202)
      return {
        kind: 'accepted',
        jobId: started.jobId,
        requestId: started.requestId,
        replay: true,
        ...headers,
      };
    const { job, codes } = (await loadJobWithCodes(deps.db, started.jobId, caller.customerId))!;
    const body = buildResult(job, codes, deps.codeKey, { request_id: started.requestId });
    return {
      kind: 'result',
      status: started.status,
      body,
      replay: true,
      requestId: started.requestId,
      billed: 0,
      jobId: started.jobId,
      ...headers,
    };
  }
  if (input.request.async)
    return { kind: 'accepted', jobId: started.jobId, requestId: input.requestId, replay: false, ...headers };

  // Sync: the account after the run comes with its last outcome (else the caller reads it).
  const job = started.job;
  const after = { burst, account: null as AccountState | null };
  try {
    const run = await runSyncJob(deps, job, started.todo, input.requestId);
    let status: number;
    let rows: JobCodeRow[];
    if (run.finished) {
      ({ status, codes: rows, account: after.account } = run.finished);
    } else {
      rows = await loadJobCodes(deps.db, job.id, job.customerId);
      status = await finishSyncJob(deps, caller, job.id, input.requestId);
    }
    const view = { ...job, reference: input.request.reference };
    const sent = input.request.source === 'codes' ? input.request.codes : undefined;
    const body = buildResult(view, rows, deps.codeKey, { request_id: input.requestId }, sent);
    return {
      kind: 'result',
      status,
      body,
      replay: false,
      requestId: input.requestId,
      billed: run.billed,
      jobId: job.id,
      ...after,
    };
  } catch (err) {
    // The database stayed away (503) or the job was taken over: the run settles what it must.
    if (err instanceof ApiError) return { kind: 'refused', error: err, ...after };
    deps.logger.error({ err, jobId: job.id }, 'redeem failed before finishing');
    await settleStoppedJob(deps, job, 'failed').catch((e: unknown) =>
      deps.logger.error({ err: e, jobId: job.id }, 'could not settle the failed redeem; the sweeper will'),
    );
    const error =
      knownError(err) ?? new ApiError('internal', 'internal error; retry with the same Idempotency-Key');
    return { kind: 'refused', error, ...after };
  }
}
