// Running a redeem's codes and finishing it: the phases after phase 1 (redeem.ts).
//   Per code: mark it out with the upstream (committed), call the activator outside any
//   transaction, then record the outcome with its capture or release in one transaction.
//   Last: finish the job and make its key replayable (async: its webhook event in the outbox).
import { isPgError, PG_UNIQUE_VIOLATION, type Queryable } from '../db/database.ts';
import { ApiError } from '../http/errors.ts';
import type { Mode } from './accounts.ts';
import { captureOne, releaseOne } from './billing.ts';
import { decryptCode } from './code-crypto.ts';
import { INSTANCE_ID, LEASE_MS } from './instance.ts';
import {
  BILLED_STATUSES,
  dispositionOf,
  ERROR_CODE_OF,
  type JobCodeRow,
  type JobRow,
  loadJob,
  loadJobCodes,
  STOCK_STATE_OF,
} from './jobs.ts';
import type { Caller, RedeemDeps } from './redeem.ts';
import { setStockState } from './stock.ts';
import { enqueueJobEvent } from './webhook-events.ts';

/** Codes of one job sent to the upstream at once. */
export const CODE_CONCURRENCY = 5;

/** Runs every pending code of a job, a few at a time. Returns how many requests this run billed. */
export async function executeJob(deps: RedeemDeps, jobId: string): Promise<number> {
  const job = await loadJob(deps.db, jobId);
  if (!job) throw new Error(`job ${jobId} not found`);
  const pending = (await loadJobCodes(deps.db, jobId)).filter((r) => r.state === 'pending');
  let billed = 0;
  let next = 0;
  const heartbeat = setInterval(() => {
    void extendLease(deps, jobId).catch((err) => deps.logger.warn({ err, jobId }, 'lease heartbeat failed'));
  }, LEASE_MS / 3);
  try {
    // After a failure no new code is started, and the codes already out are let finish, so
    // whoever settles the job afterwards sees every attempt recorded.
    let failure: { error: unknown } | null = null;
    const worker = async () => {
      while (next < pending.length && !failure) {
        const row = pending[next++]!;
        try {
          if (await attemptCode(deps, job, row)) billed += 1;
        } catch (error) {
          failure ??= { error };
        }
      }
    };
    await Promise.all(Array.from({ length: Math.min(CODE_CONCURRENCY, pending.length) }, worker));
    if (failure) throw (failure as { error: unknown }).error;
  } finally {
    clearInterval(heartbeat);
  }
  return billed;
}

async function extendLease(deps: RedeemDeps, jobId: string) {
  await deps.db.query('update jobs set lease_expires_at = $3 where id = $1 and lease_owner = $2', [
    jobId,
    INSTANCE_ID,
    new Date(deps.clock.now().getTime() + LEASE_MS),
  ]);
}

/** One code: mark it out with the upstream, call the activator, record the outcome. Returns billed. */
async function attemptCode(deps: RedeemDeps, job: JobRow, row: JobCodeRow): Promise<boolean> {
  const { db, clock } = deps;
  const code = decryptCode(deps.codeKey, row.codeEncrypted);
  try {
    // Only while this process still owns the running job: once recovery has taken it over (a
    // lost lease), its pending codes were released and must not be sent.
    const marked = await db.query(
      `update job_codes set state = 'sending', started_at = $3
        where job_id = $1 and position = $2 and state = 'pending'
          and exists (select 1 from jobs where id = $1 and status = 'running' and lease_owner = $4)`,
      [job.id, row.position, clock.now(), INSTANCE_ID],
    );
    if (marked.rowCount === 0) return false;
  } catch (err) {
    if (!isPgError(err, PG_UNIQUE_VIOLATION)) throw err;
    // The same code is out with the upstream for another request: never send it twice at once.
    await recordOutcome(deps, job, row, { status: 'failed', unknown: false }, 'pending');
    return false;
  }
  let outcome: {
    status: JobCodeRow['status'] & string;
    unknown?: boolean;
    category?: string | null;
    uc?: number | null;
  };
  try {
    outcome = await deps.activatorFor(job.mode).activate({ mode: job.mode, code, playerId: job.playerId });
  } catch (err) {
    // The code may have reached the upstream: its fate is unknown until a status check.
    deps.logger.warn({ err, jobId: job.id, code: `…${row.last4}` }, 'activator call failed');
    outcome = { status: 'failed', unknown: true };
  }
  await recordOutcome(deps, job, row, outcome, 'sending');
  return BILLED_STATUSES.has(outcome.status);
}

/** Records a code's outcome with its capture or release and its stock state, in one transaction. */
export async function recordOutcome(
  deps: Pick<RedeemDeps, 'db' | 'clock'>,
  job: Pick<JobRow, 'id' | 'source'>,
  row: Pick<JobCodeRow, 'position' | 'stockId' | 'category' | 'uc'>,
  outcome: {
    status: JobCodeRow['status'] & string;
    unknown?: boolean;
    category?: string | null;
    uc?: number | null;
  },
  fromState: 'pending' | 'sending',
  tx?: Queryable,
): Promise<void> {
  const status = outcome.status;
  const billed = BILLED_STATUSES.has(status);
  const disposition = dispositionOf(status, outcome.unknown === true, job.source);
  const work = async (q: Queryable) => {
    const updated = await q.query(
      `update job_codes set state = 'done', status = $3, error_code = $4, disposition = $5, billed = $6,
              category = coalesce(category, $7), uc = coalesce(uc, $8), finished_at = $9
        where job_id = $1 and position = $2 and state = $10`,
      [
        job.id,
        row.position,
        status,
        ERROR_CODE_OF[status],
        disposition,
        billed,
        outcome.category ?? null,
        outcome.uc ?? null,
        deps.clock.now(),
        fromState,
      ],
    );
    // Recorded already (by recovery racing a slow process): never bill twice.
    if (updated.rowCount === 0) return;
    if (billed) await captureOne(q, job.id, deps.clock);
    else await releaseOne(q, job.id);
    if (row.stockId !== null) await setStockState(q, [row.stockId], STOCK_STATE_OF[disposition], deps.clock);
    await q.query('update jobs set lease_expires_at = greatest(lease_expires_at, $2) where id = $1', [
      job.id,
      new Date(deps.clock.now().getTime() + LEASE_MS),
    ]);
  };
  if (tx) await work(tx);
  else await deps.db.transaction(work);
}

/**
 * Last phase of a sync redeem: the job is completed and its key answers with a replay. Throws
 * 503 unavailable when recovery took the job over meanwhile (its key was released, so a retry
 * with the same key resumes from the recorded outcomes).
 */
export async function finishSyncJob(
  deps: RedeemDeps,
  caller: Caller,
  jobId: string,
  status: number,
  requestId: string,
) {
  await deps.db.transaction(async (tx) => {
    const done = await tx.query(
      `update jobs set status = 'completed', finished_at = $2, lease_owner = null
        where id = $1 and status = 'running' and lease_owner = $3`,
      [jobId, deps.clock.now(), INSTANCE_ID],
    );
    if (done.rowCount === 0)
      throw new ApiError(
        'unavailable',
        'the redeem was interrupted; retry with the same Idempotency-Key',
        {},
        { 'Retry-After': '1' },
      );
    await tx.query(
      `update idempotency_keys set state = 'done', response_status = $3, response_request_id = $4
        where job_id = $1 and customer_id = $2`,
      [jobId, caller.customerId, status, requestId],
    );
  });
}

/** Last phase of an async job: completed, and its redeem.completed event in the outbox. */
export async function finishAsyncJob(deps: RedeemDeps, jobId: string): Promise<boolean> {
  return deps.db.transaction(async (tx) => {
    const done = await tx.query<{ customerId: number; mode: Mode }>(
      `update jobs set status = 'completed', finished_at = $2, lease_owner = null
        where id = $1 and status = 'running' and lease_owner = $3
        returning customer_id as "customerId", mode`,
      [jobId, deps.clock.now(), INSTANCE_ID],
    );
    const job = done.rows[0];
    if (!job) return false; // taken over by recovery: it reports the job
    await enqueueJobEvent(tx, { id: jobId, ...job }, 'redeem.completed', deps.clock);
    return true;
  });
}
