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

import { shardedByCustomer } from '../../db/citus.ts';
import type { Queryable } from '../../db/database.ts';
import { readAcrossCustomers } from '../../db/reachable-shards.ts';
import { byCustomer } from '../by-customer.ts';
import type { Caller, RedeemDeps } from '../context.ts';
import { ApiError } from '../errors.ts';
import { newEventId } from '../ids.ts';
import { INSTANCE_ID, LEASE_MS } from '../instance.ts';
import {
  onReachableWorker,
  repairWorkQueue,
  TURNS_PER_CLAIM,
  tookTurns,
  UNREACHABLE,
  type WorkTurn,
} from '../work-queue.ts';
import {
  JOB_WITH_CODES,
  type JobRow,
  type JobWithCodes,
  type JobWithCodesRow,
  jobColumns,
  jobCustomer,
  jobWithCodes,
  loadJobCodesJson,
} from './jobs.ts';

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
  if (await shardedByCustomer(deps.db)) return claimJobByTurns(deps);
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
                          -- One bot redeem per customer and mode at a time (docs/reference/bot.md#commands).
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

/**
 * claimJob on Citus, with claimJob's order: the customers with queued jobs come from work_queue
 * (on the coordinator) with their last turn (job_claim_turns, on the coordinator too); their async
 * jobs running are counted on their own shards only; then the claim runs on one customer's worker
 * at a time, in order, until one gives a job (docs/running/citus.md#fair-claims-on-citus). A
 * customer whose queued jobs are all gone loses its work_queue row.
 */
async function claimJobByTurns(deps: RedeemDeps): Promise<JobWithCodes | null> {
  await repairWorkQueue(deps.db, Date.now());
  const waiting = await deps.db.query<WorkTurn>(
    `select q.customer_id as "customerId", q.mode, q.version
       from work_queue q left join job_claim_turns t on t.customer_id = q.customer_id
      where q.kind = 'job'
      order by (q.mode = 'test'), t.last_turn nulls first, q.last_turn nulls first, q.customer_id
      limit $1`,
    [TURNS_PER_CLAIM],
    'job_claim_waiting',
  );
  if (waiting.rows.length === 0) return null;
  const runningOf = await runningAsyncJobs(
    deps,
    waiting.rows.map((w) => w.customerId),
  );
  const turns = waiting.rows
    .map((w, i) => ({ ...w, version: Number(w.version), i, running: runningOf.get(w.customerId) }))
    .sort(
      (a, b) =>
        Number(a.mode === 'test') - Number(b.mode === 'test') ||
        (a.running ?? 0) - (b.running ?? 0) ||
        a.i - b.i,
    );
  const looked: WorkTurn[] = [];
  const empty: WorkTurn[] = [];
  let claimed: JobWithCodes | null = null;
  for (const turn of turns) {
    looked.push(turn);
    // Its worker did not answer the count: skipped, to the back of the turn order.
    if (turn.running === undefined) continue;
    const now = deps.clock.now();
    // Citus takes no subquery in an update's `returning`: the codes come in a second statement.
    const r = await onReachableWorker(() =>
      deps.db.query<JobRow>(
        `update jobs set status = 'running', lease_owner = $1, lease_expires_at = $2, started_at = $3
          where customer_id = $4 and status = 'queued' and id = (
            select id from jobs
             where customer_id = $4 and mode = $5 and status = 'queued'
               -- One bot redeem per customer and mode at a time (docs/reference/bot.md#commands).
               and (channel = 'api' or not exists (
                     select 1 from jobs r where r.customer_id = $4 and r.mode = $5
                        and r.channel = 'bot' and r.status = 'running'))
             order by created_at, id limit 1
             for update skip locked)
       returning ${jobColumns('jobs')}`,
        [INSTANCE_ID, new Date(now.getTime() + LEASE_MS), now, turn.customerId, turn.mode],
        'job_claim_routed',
      ),
    );
    if (r === UNREACHABLE) continue;
    const job = r.rows[0];
    if (job) {
      await deps.db.query(
        `insert into job_claim_turns (customer_id, last_turn) values ($1, nextval('job_claim_turn'))
         on conflict (customer_id) do update set last_turn = excluded.last_turn`,
        [job.customerId],
        'job_claim_turn',
      );
      claimed = { job, codes: await loadJobCodesJson(deps.db, job.customerId, job.id) };
      break;
    }
    const left = await deps.db.query<{ left: boolean }>(
      `select exists (select 1 from jobs where customer_id = $1 and mode = $2 and status = 'queued') as left`,
      [turn.customerId, turn.mode],
      'job_claim_left',
    );
    if (!left.rows[0]!.left) empty.push(turn);
  }
  await tookTurns(deps.db, 'job', looked, empty);
  return claimed;
}

/**
 * The async jobs running of each customer, counted on their own shards only: one statement, or,
 * when a worker does not answer it, one per customer, and a customer of that worker is left out
 * (its claim skipped) rather than every customer's claim failing.
 */
async function runningAsyncJobs(deps: RedeemDeps, customerIds: number[]): Promise<Map<number, number>> {
  const count = (ids: number[]) =>
    deps.db.query<{ customerId: number; n: number }>(
      `select customer_id as "customerId", count(*)::int as n from jobs
        where customer_id = any($1::bigint[]) and status = 'running' and is_async
        group by customer_id`,
      [ids],
      'job_claim_running',
    );
  const runningOf = new Map<number, number>();
  const all = await onReachableWorker(() => count(customerIds));
  if (all !== UNREACHABLE) {
    for (const id of customerIds) runningOf.set(id, 0);
    for (const r of all.rows) runningOf.set(r.customerId, r.n);
    return runningOf;
  }
  for (const id of customerIds) {
    const one = await onReachableWorker(() => count([id]));
    if (one !== UNREACHABLE) runningOf.set(id, one.rows[0]?.n ?? 0);
  }
  return runningOf;
}

/**
 * Extends this process's lease on a running job; a job taken over meanwhile ends the lease. Named
 * by its customer too, so that on Citus the heartbeat goes to that customer's worker alone (by
 * the id alone it asked every worker, and failed while any one was down).
 */
export async function extendLease(deps: RedeemDeps, job: { id: string; customerId: number }, lease: Lease) {
  const until = deps.clock.now().getTime() + LEASE_MS;
  const r = await deps.db.query(
    'update jobs set lease_expires_at = $3 where customer_id = $4 and id = $1 and lease_owner = $2',
    [job.id, INSTANCE_ID, new Date(until), job.customerId],
    'job_lease_extend',
  );
  // Taken over (recovery found the lease run out): nothing of this job is ours to write any more.
  lease.until = r.rowCount > 0 ? Math.max(lease.until, until) : 0;
}

/**
 * Async jobs this process holds the lease of but does not run: a claim whose answer was lost
 * with its connection (the update committed, the reply never came). `partial`: a Citus worker
 * did not answer, and its jobs are not among them (readAcrossCustomers).
 */
export async function ownUnrunJobs(
  deps: RedeemDeps,
  runningIds: ReadonlySet<string>,
): Promise<{ ids: string[]; partial: boolean }> {
  const r = await readAcrossCustomers<{ id: string }>(deps.db, {
    tables: ['jobs'],
    sql: `select id from jobs where status = 'running' and is_async and lease_owner = $1`,
    params: [INSTANCE_ID],
  });
  return { ids: r.rows.map((row) => row.id).filter((id) => !runningIds.has(id)), partial: r.partial };
}

/**
 * Takes over the running jobs without a live owner (all: every running job); returns their ids.
 * Found by a read (on Citus it asks every worker; while one does not answer, the others' jobs:
 * readAcrossCustomers), then taken over one customer at a time, each job again only if still
 * orphaned: an update naming no customer writes every worker's shard,
 * a two-phase commit on every sweep (docs/running/citus.md#two-phase-commits).
 */
export async function takeOverOrphanedJobs(
  db: Queryable,
  now: Date,
  opts: { all: boolean },
): Promise<{ id: string; customerId: number }[]> {
  const orphaned = `status = 'running' and ($1 or lease_expires_at < $2 or lease_owner is null)`;
  const found = await readAcrossCustomers<{ customerId: number; id: string }>(db, {
    tables: ['jobs'],
    sql: `select customer_id as "customerId", id from jobs where ${orphaned}`,
    params: [opts.all, now],
    name: 'job_orphans',
  });
  const taken: { id: string; customerId: number }[] = [];
  for (const [customerId, rows] of byCustomer(found.rows)) {
    const ids = rows.map((row) => row.id);
    // A worker that stopped since the read: its customers' jobs wait for a later sweep.
    const r = await onReachableWorker(() =>
      db.query<{ id: string }>(
        `update jobs set lease_owner = $3, lease_expires_at = $4
          where customer_id = $5 and id = any($6::text[]) and ${orphaned}
          returning id`,
        [opts.all, now, INSTANCE_ID, new Date(now.getTime() + LEASE_MS), customerId, ids],
        'job_take_over',
      ),
    );
    if (r !== UNREACHABLE) taken.push(...r.rows.map((row) => ({ id: row.id, customerId })));
  }
  return taken;
}

/** Ends a job that stopped before finishing, with its error (stored without codes). */
export async function stopJob(
  tx: Queryable,
  job: { customerId: number; id: string },
  as: 'failed' | 'interrupted',
  error: { error_code: string; message: string },
  now: Date,
): Promise<void> {
  // The customer named: in the transaction that released the job's holds on its worker, an
  // update by id alone would write every worker, a two-phase commit
  // (docs/running/citus.md#two-phase-commits).
  await tx.query(
    `update jobs set status = $2, error = $3, finished_at = $4, lease_owner = null
      where customer_id = $5 and id = $1`,
    [job.id, as, JSON.stringify(error), now, job.customerId],
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
export async function finishAsyncJob(
  deps: RedeemDeps,
  job: { id: string; customerId: number | null },
): Promise<boolean> {
  const jobId = job.id;
  const customerId = job.customerId ?? (await jobCustomer(deps.db, jobId));
  if (customerId === null) return false;
  const r = await deps.db.query<{ finished: boolean }>(
    'select job_finish_async($1, $2, $3, $4, $5) as finished',
    [customerId, jobId, deps.clock.now(), INSTANCE_ID, newEventId()],
    'job_finish_async',
  );
  // False: taken over by recovery, which reports the job.
  return r.rows[0]!.finished;
}
