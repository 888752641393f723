// SQL for jobs and their codes: the rows that a redeem's result is built from
// (redeem/outcomes.ts), each read by one statement.

import type { Queryable } from '../../db/database.ts';
import { type AccountRow, accountRowSql } from '../accounts/accounts.ts';
import type { ActivationStatus, Disposition, JobStatus, Mode } from '../vocabulary.ts';

export interface JobRow {
  id: string;
  customerId: number;
  mode: Mode;
  idempotencyKey: string;
  isAsync: boolean;
  status: JobStatus;
  source: 'codes' | 'stock';
  playerId: string;
  reference: string | null;
  total: number;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  error: Record<string, unknown> | null;
  /** The request that created the job (async jobs answer with it). */
  requestId: string | null;
  /** `bot`: a manual redeem from the chat (docs/reference/bot.md#commands): nothing held or billed, no webhook. */
  channel: JobChannel;
}

export type JobChannel = 'api' | 'bot';

export interface JobCodeRow {
  position: number;
  codeHash: string;
  /** Null once retention dropped it (core/sweeper/retention.ts); then codeLength says how long the code was. */
  codeEncrypted: string | null;
  codeLength: number | null;
  last4: string;
  stockId: number | null;
  category: string | null;
  uc: number | null;
  state: 'pending' | 'sending' | 'done';
  status: ActivationStatus | null;
  errorCode: string | null;
  disposition: Disposition | null;
  billed: boolean | null;
  reused: boolean;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** For a quarantined code: what a status check or the operator found ('used' or 'unused'). */
  settlement: 'used' | 'unused' | null;
}

/** The columns of JobRow, from jobs under the alias `a`. */
export const jobColumns = (a: string) => `${a}.id, ${a}.customer_id as "customerId", ${a}.mode,
  ${a}.idempotency_key as "idempotencyKey", ${a}.is_async as "isAsync", ${a}.status, ${a}.source,
  ${a}.player_id as "playerId", ${a}.reference, ${a}.total, ${a}.lease_owner as "leaseOwner",
  ${a}.lease_expires_at as "leaseExpiresAt", ${a}.created_at as "createdAt", ${a}.started_at as "startedAt",
  ${a}.finished_at as "finishedAt", ${a}.error, ${a}.request_id as "requestId", ${a}.channel`;
const JOB_COLUMNS = jobColumns('jobs');

/**
 * A job's codes as one jsonb array in position order, as job_codes_scan gives them
 * (functions/jobs.sql; the same fields): a subquery, so a query over `jobs` reads them without
 * calling a function (on Citus a function that reads customer tables cannot run inside a query
 * sent to a worker). `a` is the jobs row's alias; `customer` the customer, named as a parameter
 * where the caller has one: Citus routes a query to one worker only when every customer table in
 * it is filtered by the parameter itself, not by a column equal to it (a correlated
 * `c.customer_id = j.customer_id` asks every shard; docs/running/citus.md#one-worker-per-statement).
 */
function jobCodesJson(a: string, customer = `${a}.customer_id`): string {
  return `(select coalesce(jsonb_agg(jsonb_build_object(
           'position', c.position, 'codeHash', c.code_hash, 'codeEncrypted', c.code_encrypted,
           'codeLength', c.code_length, 'last4', c.last4, 'stockId', c.stock_id, 'category', c.category, 'uc', c.uc,
           'state', c.state, 'status', c.status, 'errorCode', c.error_code, 'disposition', c.disposition,
           'billed', c.billed, 'reused', c.reused) order by c.position), '[]'::jsonb)
      from job_codes c where c.customer_id = ${customer} and c.job_id = ${a}.id)`;
}

const CODE_COLUMNS = `position, code_hash as "codeHash", code_encrypted as "codeEncrypted",
  code_length as "codeLength", last4,
  stock_id as "stockId", category, uc, state, status, error_code as "errorCode", disposition, billed, reused,
  started_at as "startedAt", finished_at as "finishedAt", settlement`;

/**
 * The customer a job belongs to, by the job's id alone (null for no such job): what a statement
 * that locks or writes the job names first, so that on Citus it runs on that customer's worker.
 */
export async function jobCustomer(q: Queryable, jobId: string): Promise<number | null> {
  const r = await q.query<{ customerId: number }>(
    'select customer_id as "customerId" from jobs where id = $1',
    [jobId],
    'job_customer',
  );
  return r.rows[0]?.customerId ?? null;
}

/** A job by its id; named by its customer where the caller knows it (see loadJobWithCodes). */
export async function loadJob(
  q: Queryable,
  jobId: string,
  customerId: number | null = null,
): Promise<JobRow | null> {
  const r =
    customerId === null
      ? await q.query<JobRow>(`select ${JOB_COLUMNS} from jobs where id = $1`, [jobId], 'job_by_id')
      : await q.query<JobRow>(
          `select ${JOB_COLUMNS} from jobs where customer_id = $2 and id = $1`,
          [jobId, customerId],
          'job_by_customer_id',
        );
  return r.rows[0] ?? null;
}

/**
 * A job with its codes in one statement (the codes as job_codes_json gives them, functions/jobs.sql:
 * every field a run or a result needs; startedAt, finishedAt and settlement are not among them).
 */
export async function loadJobWithCodes(
  q: Queryable,
  jobId: string,
  customerId: number | null,
): Promise<JobWithCodes | null> {
  // Named by its customer where the caller knows it: on Citus the read goes to that customer's
  // worker alone. By its id alone it reads every worker's shard (an id index answers at once), and
  // fails while one of them does not answer. Two texts, not one with `($2 is null or
  // customer_id = $2)`: Citus does not prune on that.
  const r =
    customerId === null
      ? await q.query<JobWithCodesRow>(
          `select ${JOB_WITH_CODES} from jobs where id = $1`,
          [jobId],
          'job_with_codes_by_id',
        )
      : await q.query<JobWithCodesRow>(
          // The codes' subquery names the parameter too: Citus prunes it on that, not on the join.
          `select ${jobColumns('jobs')}, ${jobCodesJson('jobs', '$2')} as codes
             from jobs where customer_id = $2 and id = $1`,
          [jobId, customerId],
          'job_with_codes',
        );
  return jobWithCodes(r.rows[0]);
}

export interface JobWithCodes {
  job: JobRow;
  codes: JobCodeRow[];
}

/** A job row and its codes as one row of `jobs` gives them (a select, or an update's `returning`). */
export const JOB_WITH_CODES = jobWithCodesColumns('jobs');

/** JOB_WITH_CODES of the jobs row named `a`. */
function jobWithCodesColumns(a: string): string {
  return `${jobColumns(a)}, ${jobCodesJson(a)} as codes`;
}

/** A job's codes as JOB_WITH_CODES gives them, by themselves (after a claim on Citus). */
export async function loadJobCodesJson(
  q: Queryable,
  customerId: number,
  jobId: string,
): Promise<JobCodeRow[]> {
  const r = await q.query<{ codes: JobCodeRow[] }>(
    `select ${jobCodesJson('j', '$1')} as codes from jobs j where j.customer_id = $1 and j.id = $2`,
    [customerId, jobId],
    'job_codes_json',
  );
  return r.rows[0]?.codes ?? [];
}
export type JobWithCodesRow = JobRow & { codes: JobCodeRow[] };

export function jobWithCodes(row: JobWithCodesRow | undefined): JobWithCodes | null {
  if (!row) return null;
  const { codes, ...job } = row;
  return { job, codes };
}

/**
 * GET /v1/jobs/{id} in one statement: the key's revocation and its customer's account (which
 * also gives the quota headers), the key's read slot (docs/reference/limits.md#read-budget) taken, and the async job of
 * that id if it is the key's customer's and mode's (jobId null: no job can have the id asked for),
 * with its codes. Null for no such key.
 */
export async function loadKeyJob(
  q: Queryable,
  key: { id: string; customerId: number },
  jobId: string | null,
  day: string,
): Promise<{
  revokedAt: Date | null;
  expiresAt: Date | null;
  account: AccountRow;
  job: JobRow | null;
  codes: JobCodeRow[];
} | null> {
  const r = await q.query<
    JobRow & {
      revokedAt: Date | null;
      keyExpiresAt: Date | null;
      account: AccountRow;
      codes: JobCodeRow[] | null;
      found: boolean;
    }
  >(
    `select k.revoked_at as "revokedAt", k.expires_at as "keyExpiresAt", to_jsonb(a) as account,
            j.id is not null as found, ${jobColumns('j')}, case when j.id is null then null else ${jobCodesJson('j', '$4')} end as codes
       from api_keys k
       cross join lateral ${accountRowSql('$4', 'k.mode', '$2::date')} a
       left join jobs j on j.customer_id = $4 and j.id = $3 and j.mode = k.mode and j.is_async
      where k.customer_id = $4 and k.id = $1`,
    // No id for jobId null (a job's id is never empty): Citus cannot plan `j.id = null` in this join.
    [key.id, day, jobId ?? '', key.customerId],
    'key_job',
  );
  const row = r.rows[0];
  if (!row) return null;
  const { revokedAt, keyExpiresAt, account, codes, found, ...job } = row;
  // The key's expiry is read again: a reroll (docs/reference/operators-and-audit.md#key-reroll) moves a cached key's expiry.
  return {
    revokedAt,
    expiresAt: keyExpiresAt,
    account,
    job: found ? job : null,
    codes: codes ?? [],
  };
}

/** Jobs queued or running now, by status and mode (the metrics' gauge; the partial index jobs_unfinished serves it). */
export async function countUnfinishedJobs(
  q: Pick<Queryable, 'query'>,
): Promise<{ status: 'queued' | 'running'; mode: Mode; n: number }[]> {
  const r = await q.query<{ status: 'queued' | 'running'; mode: Mode; n: number }>(
    `select status, mode, count(*)::int as n from jobs
      where status in ('queued', 'running') group by status, mode`,
  );
  return r.rows;
}

/** A job's codes; named by its customer where the caller knows it (see loadJobWithCodes). */
export async function loadJobCodes(
  q: Queryable,
  jobId: string,
  customerId: number | null = null,
): Promise<JobCodeRow[]> {
  const r =
    customerId === null
      ? await q.query<JobCodeRow>(
          `select ${CODE_COLUMNS} from job_codes where job_id = $1 order by position`,
          [jobId],
          'job_codes_by_job',
        )
      : await q.query<JobCodeRow>(
          `select ${CODE_COLUMNS} from job_codes where customer_id = $2 and job_id = $1 order by position`,
          [jobId, customerId],
          'job_codes_by_customer_job',
        );
  return r.rows;
}
