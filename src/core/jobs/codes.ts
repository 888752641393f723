// Every write to job_codes from TypeScript, in one place: the life of a job's code row.
//
//   pending ──markSending──▶ sending ──outcome──▶ done (or quarantined ──settled──▶ settled)
//      ▲                        │
//      └──────backToPending─────┘  (a phase 1 whose commit was never confirmed: never sent)
//
// - created: by phase 1 in the SQL function redeem_create_job (functions/redeem.sql);
// - outcome, release, quarantine and settlement: by the SQL functions redeem_record_outcome,
//   job_stop and quarantine_settle (functions/redeem.sql, billing.sql), beside their money;
// - the quarantine check's claim and its pause (claimQuarantinedForCheck, recheckLater);
// - the keyring's rotation rewrites a code's hash and ciphertext (rekey);
// - retention drops the codes of old jobs, keeping their length (forgetCodes).
// Each function takes the query handle first, so it runs in the caller's transaction, as before.
// test/docs/architecture.test.ts fails when a file outside core/jobs/ writes job_codes itself.
import type { Queryable, QueryResult } from '../../db/database.ts';
import { readAcrossCustomers } from '../../db/reachable-shards.ts';
import { byCustomer } from '../by-customer.ts';
import { INSTANCE_ID } from '../instance.ts';
import type { Mode } from '../vocabulary.ts';

/**
 * Marks one code `sending` before it goes to the upstream, only while this process still owns
 * the running job (and, for an async job, while its customer is enabled). `markedAt` is the
 * mark's own time, so a retry after a lost answer recognises its own mark. rowCount 0: not ours
 * to send. Throws the unique violation of the in-flight index when the same code is out already.
 */
export function markSending(
  q: Queryable,
  job: { customerId: number; id: string },
  position: number,
  markedAt: Date,
): Promise<QueryResult<Record<string, unknown>>> {
  return q.query(
    `update job_codes set state = 'sending', started_at = $3
            where customer_id = $5 and job_id = $1 and position = $2
              and (state = 'pending' or (state = 'sending' and started_at = $3))
              and exists (select 1 from jobs j join customers c on c.id = j.customer_id
                           where j.customer_id = $5 and j.id = $1 and j.status = 'running' and j.lease_owner = $4
                             and (not j.is_async or c.disabled_at is null))`,
    [job.id, position, markedAt, INSTANCE_ID, job.customerId],
    'code_mark_sending',
  );
}

/**
 * Puts a job's `sending` codes back to `pending` while the job still runs under this process's
 * lease: they were marked by a phase 1 whose commit was never confirmed, and never sent.
 */
export async function backToPending(q: Queryable, job: { customerId: number; id: string }): Promise<void> {
  await q.query(
    `update job_codes set state = 'pending', started_at = null
          where customer_id = $3 and job_id = $1 and state = 'sending'
            and exists (select 1 from jobs where customer_id = $3 and id = $1 and status = 'running'
                           and lease_owner = $2)`,
    [job.id, INSTANCE_ID, job.customerId],
  );
}

/** A quarantined code the status check has claimed, with what it needs to ask the upstream. */
export interface ClaimedQuarantined {
  jobId: string;
  position: number;
  customerId: number;
  mode: Mode;
  codeHash: string;
  codeEncrypted: string;
  last4: string;
  attempts: number;
}

/**
 * Claims up to `limit` quarantined, unsettled codes that are due for a status check (all of them
 * with `all`): each claim counts an attempt and pushes its next check to `nextCheckAt`, so two
 * processes never check one code at once (skip locked).
 */
export async function claimQuarantinedForCheck(
  q: Queryable,
  opts: { now: Date; nextCheckAt: Date; limit: number; all: boolean; firstCheckAfterMs: number },
): Promise<ClaimedQuarantined[]> {
  const due = `disposition = 'quarantined' and settled_at is null and not reused
    and ($3 or coalesce(next_check_at, finished_at + $4 * interval '1 millisecond') <= $1)`;
  // Found by a read without locks (on Citus it asks every worker; while one does not answer, the
  // others' codes: readAcrossCustomers), then claimed one customer at a time on that customer's
  // worker, each code again only if still due and not locked.
  const found = await readAcrossCustomers<{ customerId: number; jobId: string; position: number }>(q, {
    tables: ['job_codes'],
    sql: `select customer_id as "customerId", job_id as "jobId", position from job_codes
           where ${due} order by finished_at limit $2`,
    params: [opts.now, opts.limit, opts.all, opts.firstCheckAfterMs],
  });
  const claimed: ClaimedQuarantined[] = [];
  for (const [customerId, codes] of byCustomer(found.rows)) {
    const r = await q.query<ClaimedQuarantined>(
      `update job_codes c set check_attempts = c.check_attempts + 1, next_check_at = $2
         from jobs j
        where c.customer_id = $5 and j.customer_id = $5 and j.id = c.job_id and (c.job_id, c.position) in (
                select job_id, position from job_codes
                 where customer_id = $5 and (job_id, position) in (select * from unnest($6::text[], $7::int[]))
                   and ${due}
                 for update skip locked)
        returning c.job_id as "jobId", c.position, j.customer_id as "customerId", j.mode, c.code_hash as "codeHash",
                  c.code_encrypted as "codeEncrypted", c.last4,
                  c.check_attempts as attempts`,
      [
        opts.now,
        opts.nextCheckAt,
        opts.all,
        opts.firstCheckAfterMs,
        customerId,
        codes.map((c) => c.jobId),
        codes.map((c) => c.position),
      ],
    );
    claimed.push(...r.rows);
  }
  return claimed;
}

/** Sets when a quarantined code the upstream could not tell about is checked again. */
export async function recheckLater(
  q: Queryable,
  code: { customerId: number; jobId: string; position: number },
  at: Date,
): Promise<void> {
  await q.query(
    'update job_codes set next_check_at = $3 where customer_id = $4 and job_id = $1 and position = $2',
    [code.jobId, code.position, at, code.customerId],
  );
}

/** Writes one code's lookup hash and ciphertext anew (the keyring's rotation, in its batch). */
export async function rekey(
  q: Queryable,
  code: { customerId: number; jobId: string; position: number },
  hash: string,
  encrypted: string,
): Promise<void> {
  await q.query(
    'update job_codes set code_hash = $4, code_encrypted = $5 where customer_id = $1 and job_id = $2 and position = $3',
    [code.customerId, code.jobId, code.position, hash, encrypted],
  );
}

/**
 * Drops the codes of the jobs named (retention), keeping each code's length: that of its
 * ciphertext less IV and tag (base64 after the last ':', in both the v1 and the v2 format; codes
 * are ASCII). Returns how many codes it dropped.
 */
export async function forgetCodes(q: Queryable, customerId: number, jobIds: string[]): Promise<number> {
  const r = await q.query(
    `update job_codes
            set code_length = octet_length(decode(substring(code_encrypted from '[^:]*$'), 'base64')) - 28,
                code_encrypted = null
          where customer_id = $2 and job_id = any($1::text[]) and code_encrypted is not null`,
    [jobIds, customerId],
  );
  return r.rowCount;
}
