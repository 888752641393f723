// Idempotency keys (docs/reference/idempotency.md#answers): the life of a key, in one place.
//
//   (absent or expired) ──take──▶ in_progress ──finish──▶ done ──24 h──▶ purged
//                                      │                    ▲
//                                      └──release──▶ released ──take again (resume)──┘
//
// - read and take: phase 1, under the account's row lock, in the SQL functions redeem_begin (the
//   verdict: conflict, in_progress, interrupted, replay, or resume) and redeem_create_job (the
//   take; an async request's key is taken `done` with its 202 at once), functions/redeem.sql;
// - finish: job_finish_sync, in the same commit as the sync job's last outcome (or finishSyncJob,
//   core/redeem/run.ts), by primary key: the job names its key;
// - release: below, when a sync job stopped before finishing (a 5xx): a retry with the key
//   resumes from the recorded outcomes;
// - purge: below, by the sweeper.
import type { Queryable } from '../../db/database.ts';
import { readAcrossCustomers } from '../../db/reachable-shards.ts';
import { byCustomer } from '../by-customer.ts';
import type { JobRow } from '../jobs/jobs.ts';

/** Releases the key of a sync job settled as failed or interrupted, if it still points at it. */
export async function releaseKey(
  tx: Queryable,
  job: Pick<JobRow, 'id' | 'customerId' | 'mode' | 'idempotencyKey'>,
): Promise<void> {
  await tx.query(
    `update idempotency_keys set state = 'released' where customer_id = $1 and mode = $2 and key = $3 and job_id = $4`,
    [job.customerId, job.mode, job.idempotencyKey, job.id],
  );
}

/**
 * Deletes idempotency keys past their 24 hours (an expired key already counts as absent; this
 * only keeps the table small). Bounded per call so one sweep never holds the database long.
 */
export async function purgeExpiredKeys(db: Queryable, now: Date): Promise<number> {
  // Found by a read (on Citus it asks every worker; while one does not answer, the others' keys:
  // readAcrossCustomers), then deleted one customer at a time, on that customer's worker.
  const found = await readAcrossCustomers<{ customerId: number; mode: string; key: string }>(db, {
    tables: ['idempotency_keys'],
    sql: 'select customer_id as "customerId", mode, key from idempotency_keys where expires_at < $1 limit 1000',
    params: [now],
  });
  let deleted = 0;
  for (const [customerId, keys] of byCustomer(found.rows)) {
    const r = await db.query(
      `delete from idempotency_keys
        where customer_id = $1 and (mode, key) in (select * from unnest($2::text[], $3::text[])) and expires_at < $4`,
      [customerId, keys.map((k) => k.mode), keys.map((k) => k.key), now],
    );
    deleted += r.rowCount;
  }
  return deleted;
}
