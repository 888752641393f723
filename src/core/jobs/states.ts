// Job state changes, in one place: the life of a job row.
//
//   queued ──claim──▶ running ──finish──▶ completed
//     (async)          │  ▲ lease kept while it runs
//                      └──stop──▶ failed | interrupted
//
// - created: by phase 1 in the SQL function redeem_create_job (functions/redeem.sql), `queued` for an
//   async redeem, `running` under this process's lease for a sync one;
// - claim: the job worker takes a queued job (claimJob), fairly across customers;
// - lease: a run keeps its job's lease (extendLease; each recorded outcome extends it too, in
//   redeem_record_outcome); recovery takes over jobs whose lease ran out (takeOverOrphanedJobs);
// - finish: by the commit of the job's last outcome (redeem_record_outcome), or here when no
//   outcome did: a sync job with its key (job_finish_sync, finishSyncJob), an async job with its
//   webhook event in the outbox (job_finish_async; finishAsyncJob);
// - stop: recovery settles a job that stopped before finishing as failed or interrupted
//   (stopJob, inside settleStoppedJob of redeem/settle.ts, which releases what it held).
import type { Queryable } from '../../db/database.ts';
import type { Caller, RedeemDeps } from '../context.ts';
import { ApiError } from '../errors.ts';
import { newEventId } from '../ids.ts';
import { INSTANCE_ID, LEASE_MS } from '../instance.ts';
import { JOB_WITH_CODES, type JobWithCodes, type JobWithCodesRow, jobWithCodes } from './jobs.ts';

/** What a job's run knows of its lease: until when (clock ms) no one else may take the job. */
export interface Lease {
  until: number;
}

/**
 * Claims one queued job for this process and returns it with its codes (so its run starts
 * without reading them again), or returns null. Fair across customers: live jobs before test
 * jobs, then the customer with the fewest async jobs running (across every process; a sync
 * redeem in its one call is no worker's job), then the customer whose last claim is the oldest
 * (job_claim_turns, migration 0015), then the oldest job. So a customer with thousands of
 * queued jobs takes turns with one that has a single job, and test traffic never delays live
 * traffic.
 *
 * Only each customer's oldest queued job (per mode) is a candidate, found by a skip scan over
 * jobs_queued_by_customer (one index probe per waiting customer), so a claim costs the same with
 * a backlog of ten jobs or of a hundred thousand. A candidate another process is claiming right
 * now (locked) is skipped for this round.
 */
export async function claimJob(deps: RedeemDeps): Promise<JobWithCodes | null> {
  const now = deps.clock.now();
  const r = await deps.db.query<JobWithCodesRow>(
    `with recursive waiting (mode, customer_id) as (
       (select mode, customer_id from jobs where status = 'queued' order by mode, customer_id limit 1)
       union all
       select next.mode, next.customer_id
         from waiting w,
              lateral (select mode, customer_id from jobs
                        where status = 'queued' and (mode, customer_id) > (w.mode, w.customer_id)
                        order by mode, customer_id limit 1) next
     ),
     candidates as (
       select oldest.id, oldest.created_at, w.mode, w.customer_id
         from waiting w,
              lateral (select id, created_at from jobs
                        where status = 'queued' and mode = w.mode and customer_id = w.customer_id
                          -- One bot redeem per customer and mode at a time (contract 14.4).
                          and (channel = 'api' or not exists (
                                select 1 from jobs r where r.customer_id = w.customer_id and r.mode = w.mode
                                   and r.channel = 'bot' and r.status = 'running'))
                        order by created_at, id limit 1) oldest
     ),
     ranked as (
       select c.id, row_number() over (
                order by (c.mode = 'test'),
                         (select count(*) from jobs b where b.customer_id = c.customer_id and b.status = 'running' and b.is_async),
                         (select t.last_turn from job_claim_turns t where t.customer_id = c.customer_id) nulls first,
                         c.created_at, c.id) as turn
         from candidates c
     ),
     claimed as (
       update jobs set status = 'running', lease_owner = $1, lease_expires_at = $2, started_at = $3
        where id = (
          select j.id from jobs j join ranked on ranked.id = j.id
           where j.status = 'queued'
           order by ranked.turn
           limit 1
           for update of j skip locked)
          and status = 'queued'
        returning ${JOB_WITH_CODES}
     ),
     took_turn as (
       insert into job_claim_turns (customer_id, last_turn)
       select "customerId", nextval('job_claim_turn') from claimed
       on conflict (customer_id) do update set last_turn = excluded.last_turn
     )
     select * from claimed`,
    [INSTANCE_ID, new Date(now.getTime() + LEASE_MS), now],
    'job_claim',
  );
  return jobWithCodes(r.rows[0]);
}

/** Extends this process's lease on a running job; a job taken over meanwhile ends the lease. */
export async function extendLease(deps: RedeemDeps, jobId: string, lease: Lease) {
  const until = deps.clock.now().getTime() + LEASE_MS;
  const r = await deps.db.query('update jobs set lease_expires_at = $3 where id = $1 and lease_owner = $2', [
    jobId,
    INSTANCE_ID,
    new Date(until),
  ]);
  // Taken over (recovery found the lease run out): nothing of this job is ours to write any more.
  lease.until = r.rowCount > 0 ? Math.max(lease.until, until) : 0;
}

/**
 * Async jobs this process holds the lease of but does not run: a claim whose answer was lost
 * with its connection (the update committed, the reply never came).
 */
export async function ownUnrunJobs(deps: RedeemDeps, runningIds: ReadonlySet<string>): Promise<string[]> {
  const r = await deps.db.query<{ id: string }>(
    `select id from jobs where status = 'running' and is_async and lease_owner = $1`,
    [INSTANCE_ID],
  );
  return r.rows.map((row) => row.id).filter((id) => !runningIds.has(id));
}

/** Takes over the running jobs without a live owner (all: every running job); returns their ids. */
export async function takeOverOrphanedJobs(
  db: Queryable,
  now: Date,
  opts: { all: boolean },
): Promise<string[]> {
  const r = await db.query<{ id: string }>(
    `update jobs set lease_owner = $1, lease_expires_at = $2
      where status = 'running' and ($3 or lease_expires_at < $4 or lease_owner is null)
      returning id`,
    [INSTANCE_ID, new Date(now.getTime() + LEASE_MS), opts.all, now],
  );
  return r.rows.map((row) => row.id);
}

/** Ends a job that stopped before finishing, with its error (stored without codes). */
export async function stopJob(
  tx: Queryable,
  jobId: string,
  as: 'failed' | 'interrupted',
  error: { error_code: string; message: string },
  now: Date,
): Promise<void> {
  await tx.query(
    `update jobs set status = $2, error = $3, finished_at = $4, lease_owner = null where id = $1`,
    [jobId, as, JSON.stringify(error), now],
  );
}

/**
 * Last phase of a sync redeem whose last outcome did not finish it: the job is completed and its
 * key answers with a replay. Returns the status stored with the key. Throws 503 unavailable when
 * recovery took the job over meanwhile (its key was released, so a retry with the same key
 * resumes from the recorded outcomes).
 */
export async function finishSyncJob(
  deps: RedeemDeps,
  caller: Caller,
  jobId: string,
  requestId: string,
): Promise<number> {
  const r = await deps.db.query<{ status: number | null }>(
    'select job_finish_sync($1, $2, $3, $4, $5, $6) as status',
    [jobId, deps.clock.now(), INSTANCE_ID, caller.customerId, caller.mode, requestId],
    'sync_job_finish',
  );
  const status = r.rows[0]!.status;
  if (status === null)
    throw new ApiError(
      'unavailable',
      'the redeem was interrupted; retry with the same Idempotency-Key',
      {},
      { 'Retry-After': '1' },
    );
  return status;
}

/**
 * Last phase of an async job no outcome finished: completed, and its redeem.completed event in
 * the outbox (one statement).
 */
export async function finishAsyncJob(deps: RedeemDeps, jobId: string): Promise<boolean> {
  const r = await deps.db.query<{ finished: boolean }>(
    'select job_finish_async($1, $2, $3, $4) as finished',
    [jobId, deps.clock.now(), INSTANCE_ID, newEventId()],
    'job_finish_async',
  );
  // False: taken over by recovery, which reports the job.
  return r.rows[0]!.finished;
}
