// Millisecond timestamps of async jobs, read straight from the database after a run. The API
// gives job times as ISO seconds and the webhook envelope's created_at as Unix seconds, too
// coarse for latencies of a few hundred ms; the rows keep microseconds, stamped by the server's
// clock, which on one machine is the same clock the receiver reads.
import type { Queryable } from '../src/db/database.ts';

export interface JobTiming {
  jobId: string;
  status: string;
  createdAt: number;
  startedAt: number | null;
  finishedAt: number | null;
  /** The redeem.completed (or failed) event row, written in the transaction that ended the job. */
  eventCreatedAt: number | null;
  eventState: string | null;
  /** The first delivery attempt: when the webhook worker started sending, and how long it took. */
  attemptStartedAt: number | null;
  attemptMs: number | null;
  attempts: number;
  /** Per code: started (marked out with the upstream) to outcome recorded, in ms. */
  codeMs: number[];
  codeStatuses: string[];
}

const ms = (d: Date | string | null | undefined) => (d == null ? null : new Date(d).getTime());

/** Every async job in the database (the bench's throwaway database holds only the bench's). */
export async function readJobTimings(db: Queryable): Promise<Map<string, JobTiming>> {
  const jobs = await db.query<{
    id: string;
    status: string;
    createdAt: Date;
    startedAt: Date | null;
    finishedAt: Date | null;
    eventCreatedAt: Date | null;
    eventState: string | null;
    attempts: number | null;
    attemptStartedAt: Date | null;
    attemptMs: number | null;
  }>(
    `select j.id, j.status, j.created_at as "createdAt", j.started_at as "startedAt", j.finished_at as "finishedAt",
            e.created_at as "eventCreatedAt", e.state as "eventState", e.attempts,
            a.started_at as "attemptStartedAt", a.duration_ms as "attemptMs"
       from jobs j
       left join webhook_events e on e.job_id = j.id
       left join webhook_attempts a on a.event_id = e.id and a.attempt = 1
      where j.is_async`,
  );
  const out = new Map<string, JobTiming>();
  for (const r of jobs.rows) {
    out.set(r.id, {
      jobId: r.id,
      status: r.status,
      createdAt: ms(r.createdAt)!,
      startedAt: ms(r.startedAt),
      finishedAt: ms(r.finishedAt),
      eventCreatedAt: ms(r.eventCreatedAt),
      eventState: r.eventState,
      attemptStartedAt: ms(r.attemptStartedAt),
      attemptMs: r.attemptMs,
      attempts: r.attempts ?? 0,
      codeMs: [],
      codeStatuses: [],
    });
  }
  const codes = await db.query<{
    jobId: string;
    startedAt: Date | null;
    finishedAt: Date | null;
    status: string;
  }>(
    `select c.job_id as "jobId", c.started_at as "startedAt", c.finished_at as "finishedAt", c.status
       from job_codes c join jobs j on j.id = c.job_id
      where j.is_async
      order by c.job_id, c.position`,
  );
  for (const c of codes.rows) {
    const t = out.get(c.jobId);
    if (!t) continue;
    const started = ms(c.startedAt);
    const finished = ms(c.finishedAt);
    if (started !== null && finished !== null) t.codeMs.push(finished - started);
    t.codeStatuses.push(c.status);
  }
  return out;
}
