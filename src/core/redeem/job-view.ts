// What callers see of an async job: GET /v1/jobs/{id}, its redeem result, its error body, and
// the `data` of its webhook events. All are built from the job's rows when asked, and every code
// in them goes through codeResults (outcomes.ts), where stock codes are masked (docs/reference/redeem.md#stock-codes-are-masked).
import type { Queryable } from '../../db/database.ts';
import { isoUtc } from '../clock.ts';
import { type JobCodeRow, type JobRow, loadJobWithCodes } from '../jobs/jobs.ts';
import type { JobEvent } from '../vocabulary.ts';
import { buildResult, codeResults } from './outcomes.ts';

/** The redeem result of a completed job (docs/reference/redeem.md#the-result, plus job_id). */
export function jobResultBody(job: JobRow, rows: JobCodeRow[], codeKey: Buffer) {
  return buildResult(job, rows, codeKey, { request_id: job.requestId, job_id: job.id });
}

/** The error body of a failed or interrupted job, with job_id (and, when interrupted, the outcomes recorded before the stop). */
export function jobErrorBody(job: JobRow, rows: JobCodeRow[], codeKey: Buffer) {
  const stored = (job.error ?? {}) as { error_code?: string; message?: string };
  const errorCode = stored.error_code ?? (job.status === 'interrupted' ? 'job_interrupted' : 'internal');
  const body: Record<string, unknown> = {
    ok: false,
    error_code: errorCode,
    message: stored.message ?? 'the job did not finish',
    request_id: job.requestId,
    job_id: job.id,
  };
  if (errorCode === 'job_interrupted') body.codes = codeResults(job, rows, codeKey);
  return body;
}

export function jobView(job: JobRow, rows: JobCodeRow[], codeKey: Buffer, requestId: string) {
  return {
    ok: true,
    request_id: requestId,
    job_id: job.id,
    status: job.status,
    created_at: isoUtc(job.createdAt),
    started_at: job.startedAt ? isoUtc(job.startedAt) : null,
    finished_at: job.finishedAt ? isoUtc(job.finishedAt) : null,
    player_id: job.playerId,
    source: job.source,
    reference: job.reference,
    // Only a bot redeem says where it came from (docs/reference/bot.md#commands); an API job's body is as docs/reference/jobs.md#the-job-record shows it.
    ...(job.channel === 'bot' ? { channel: 'bot' as const } : {}),
    progress: { total: job.total, done: rows.filter((r) => r.state === 'done').length },
    result: job.status === 'completed' ? jobResultBody(job, rows, codeKey) : null,
    error: job.status === 'failed' || job.status === 'interrupted' ? jobErrorBody(job, rows, codeKey) : null,
  };
}

/** The `data` of a job's webhook event, built now from the job's rows; null for an unknown job. */
export async function jobEventData(
  q: Queryable,
  codeKey: Buffer,
  of: { customerId: number; id: string },
  event: JobEvent,
) {
  const loaded = await loadJobWithCodes(q, of.id, of.customerId);
  if (!loaded) return null;
  const { job, codes: rows } = loaded;
  return event === 'redeem.completed' ? jobResultBody(job, rows, codeKey) : jobErrorBody(job, rows, codeKey);
}
