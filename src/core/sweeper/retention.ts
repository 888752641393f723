// Retention (docs/reference/running.md#retention): what the service keeps of old work, and for how long.
// A finished job (completed, failed or interrupted) whose finished_at is more than RETENTION_DAYS
// ago keeps its row, outcomes and billing counters, but loses its code ciphertexts: those of its
// job_codes rows, and those of the stock codes it consumed or deleted (their keyed hash stays, so
// such a code still cannot be imported again). From then on answers show its caller codes masked,
// from the last 4 characters and the length kept beside them (jobs.ts, codeResults).
// Webhook events and their attempts older than that are deleted. The wallet ledger, daily usage
// and the jobs' billing counters are never touched.
//
// Not swept (yet): a job with a quarantined code still unsettled, since its status check needs the
// code; it is swept once settled. A replay never sees a swept job: idempotency keys last 24 hours,
// and RETENTION_DAYS is at least 1 day after the job finished.
//
// Work is done in short transactions of at most `batch` jobs (at most 50 codes each) or `batch`
// webhook events, giving the event loop (and, on PGlite, the single connection) back between
// batches, and at most `maxBatches` of each per call, so one sweep never holds requests up for
// long; the next sweep goes on where it stopped.
import type { Database } from '../../db/database.ts';
import { readAcrossCustomers } from '../../db/reachable-shards.ts';
import { byCustomer } from '../by-customer.ts';
import type { Clock } from '../clock.ts';
import { forgetCodes } from '../jobs/codes.ts';

export interface RetentionOptions {
  /** Jobs, or webhook events, per transaction (default 100). */
  batch?: number;
  /** Transactions of each kind per call (default 20). */
  maxBatches?: number;
}

export interface RetentionSweep {
  /** Jobs whose ciphertexts were dropped. */
  jobs: number;
  /** job_codes and stock_codes ciphertexts dropped. */
  codes: number;
  webhookEvents: number;
  webhookAttempts: number;
  /** Transactions run (both kinds). */
  batches: number;
}

const DAY_MS = 86_400_000;

interface Owned {
  customerId: number;
  id: string;
}

const yieldToEventLoop = () => new Promise<void>((resolve) => setImmediate(resolve));

export async function sweepRetention(
  db: Database,
  clock: Clock,
  days: number,
  opts: RetentionOptions = {},
): Promise<RetentionSweep> {
  if (!Number.isSafeInteger(days) || days < 1)
    throw new Error(`retention must be at least 1 day, not ${days}`);
  const batch = opts.batch ?? 100;
  const maxBatches = opts.maxBatches ?? 20;
  const now = clock.now();
  const cutoff = new Date(now.getTime() - days * DAY_MS);
  const sweep: RetentionSweep = { jobs: 0, codes: 0, webhookEvents: 0, webhookAttempts: 0, batches: 0 };

  for (let i = 0; i < maxBatches; i++) {
    // Found by a read without locks (on Citus it asks every worker; while one does not answer,
    // the others' jobs: readAcrossCustomers), then each customer's jobs locked and forgotten in a
    // transaction of their own, on that customer's worker.
    const found = await readAcrossCustomers<Owned>(db, {
      tables: ['jobs', 'job_codes'],
      sql: `select customer_id as "customerId", id from jobs j
        where codes_dropped_at is null and finished_at is not null and finished_at < $1
          and status in ('completed', 'failed', 'interrupted')
          and not exists (select 1 from job_codes c
                           where c.customer_id = j.customer_id and c.job_id = j.id and c.disposition = 'quarantined'
                             and c.settled_at is null and not c.reused)
        order by finished_at
        limit $2`,
      params: [cutoff, batch],
    });
    let n = 0;
    for (const [customerId, rows] of byCustomer(found.rows)) {
      n += await db.transaction(async (tx) => {
        // Skip locked: a job row someone is updating is taken by a later sweep.
        const picked = await tx.query<{ id: string }>(
          `select id from jobs
            where customer_id = $1 and id = any($2::text[]) and codes_dropped_at is null
            for update skip locked`,
          [customerId, rows.map((r) => r.id)],
        );
        const ids = picked.rows.map((r) => r.id);
        if (ids.length === 0) return 0;
        // Each code's length is kept (forgetCodes, core/jobs/codes.ts).
        const codes = await forgetCodes(tx, customerId, ids);
        const stock = await tx.query(
          `update stock_codes set code_encrypted = null
            where customer_id = $2 and reserved_by = any($1::text[]) and state in ('consumed', 'deleted')
              and code_encrypted is not null`,
          [ids, customerId],
        );
        await tx.query(
          'update jobs set codes_dropped_at = $2 where customer_id = $3 and id = any($1::text[])',
          [ids, now, customerId],
        );
        sweep.jobs += ids.length;
        sweep.codes += codes + stock.rowCount;
        return ids.length;
      });
    }
    sweep.batches += n > 0 ? 1 : 0;
    if (found.rows.length < batch) break;
    await yieldToEventLoop();
  }

  for (let i = 0; i < maxBatches; i++) {
    const found = await readAcrossCustomers<Owned>(db, {
      tables: ['webhook_events'],
      sql: `select customer_id as "customerId", id from webhook_events
        where created_at < $1 and (locked_until is null or locked_until < $2)
        order by created_at
        limit $3`,
      params: [cutoff, now, batch],
    });
    let n = 0;
    for (const [customerId, rows] of byCustomer(found.rows)) {
      n += await db.transaction(async (tx) => {
        // An event a delivery worker holds right now is left to a later sweep.
        const picked = await tx.query<{ id: string }>(
          `select id from webhook_events
            where customer_id = $1 and id = any($2::text[]) and (locked_until is null or locked_until < $3)
            for update skip locked`,
          [customerId, rows.map((r) => r.id), now],
        );
        const ids = picked.rows.map((r) => r.id);
        if (ids.length === 0) return 0;
        const attempts = await tx.query(
          'delete from webhook_attempts where customer_id = $2 and event_id = any($1::text[])',
          [ids, customerId],
        );
        // Redeliveries are attempts too (docs/reference/running.md#retention, docs/reference/webhooks-and-events.md#redelivery).
        const redeliveries = await tx.query(
          'delete from webhook_redeliveries where customer_id = $2 and event_id = any($1::text[])',
          [ids, customerId],
        );
        const events = await tx.query(
          'delete from webhook_events where customer_id = $2 and id = any($1::text[])',
          [ids, customerId],
        );
        sweep.webhookAttempts += attempts.rowCount + redeliveries.rowCount;
        sweep.webhookEvents += events.rowCount;
        return ids.length;
      });
    }
    sweep.batches += n > 0 ? 1 : 0;
    if (found.rows.length < batch) break;
    await yieldToEventLoop();
  }
  return sweep;
}
