// Settling a redeem whose job stopped before finishing (docs/reference/jobs.md#interrupted-jobs, docs/reference/idempotency.md#answers): its process
// died (jobs/recovery.ts finds it), or its sync request ended in a 5xx, or its run crashed.
//   - a code that was out with the upstream is failed, quarantined and refunded (it may have been
//     consumed: it must not go back to stock, and it is not billed until a status check settles it);
//   - codes never sent are released: their holds refunded, their stock available again;
//   - a sync job's idempotency key is released, so a retry with it resumes without re-sending;
//     an async job's key answers 503 job_interrupted from now on.
import { releaseOne } from '../billing/holds.ts';
import type { RedeemDeps } from '../context.ts';
import { LEASE_MS } from '../instance.ts';
import { backToPending } from '../jobs/codes.ts';
import { enqueueJobEvent } from '../jobs/job-events.ts';
import { loadJob, loadJobCodes } from '../jobs/jobs.ts';
import { stopJob } from '../jobs/states.ts';
import { retryFor, retryOnConnectionError } from '../retry.ts';
import { setStockState } from '../stock/stock.ts';
import { releaseKey } from './idempotency-keys.ts';
import { recordOutcome } from './outcome.ts';

/**
 * Settles one job that stopped before finishing, as `interrupted` (process gone) or `failed`
 * (crash). Named by its customer where the caller knows it: on Citus every read then goes to that
 * customer's worker alone, and a stopped worker does not stop the others' recovery.
 */
export async function settleStoppedJob(
  deps: RedeemDeps,
  stopped: { id: string; customerId: number | null },
  as: 'interrupted' | 'failed',
): Promise<void> {
  const jobId = stopped.id;
  const job = await loadJob(deps.db, jobId, stopped.customerId);
  if (!job || (job.status !== 'running' && job.status !== 'queued')) return;
  const rows = await loadJobCodes(deps.db, jobId, job.customerId);

  // Codes that were out with the upstream may have been consumed: failed, quarantined and
  // refunded (docs/reference/jobs.md#interrupted-jobs). Settling them by a status check is the quarantine settler's job.
  for (const row of rows.filter((r) => r.state === 'sending')) {
    await recordOutcome(deps, job, row, { status: 'failed', unknown: true }, 'sending');
  }

  await deps.db.transaction(async (tx) => {
    const locked = await tx.query<{ status: string }>(
      'select status from jobs where customer_id = $1 and id = $2 for update',
      [job.customerId, jobId],
    );
    if (locked.rows[0]?.status !== 'running' && locked.rows[0]?.status !== 'queued') return;
    const pending = (await loadJobCodes(tx, jobId, job.customerId)).filter((r) => r.state === 'pending');
    for (const _ of pending) await releaseOne(tx, job.customerId, jobId);
    const stockIds = pending.flatMap((r) => (r.stockId === null ? [] : [r.stockId]));
    await setStockState(tx, job.customerId, stockIds, 'available', deps.clock);

    // Stored without codes (bearer value); the job view adds the recorded outcomes from the rows.
    const error =
      as === 'interrupted'
        ? {
            error_code: 'job_interrupted',
            message: 'the job was stopped by a server restart; unused stock and quota were restored',
          }
        : { error_code: 'internal', message: 'the job failed on the service side; every hold was released' };
    await stopJob(tx, job, as, error, deps.clock.now());
    // A sync key is released so the same key can be retried; an async key keeps pointing at
    // its job, whose state decides the answer (503 job_interrupted, or the 202 replay).
    if (job.isAsync) {
      await enqueueJobEvent(tx, job, 'redeem.failed', deps.clock);
    } else {
      await releaseKey(tx, job);
    }
  });
}

/**
 * A phase 1 whose commit this process could not confirm (the connection died under it): the
 * request answers 503, and if the job was written after all, its codes were marked `sending` but
 * never sent, which this process knows. Once the database answers again (while the job's lease
 * would still be ours), those codes go back to `pending` and the job is settled as failed, so its
 * holds are released and a retry with the same key sends them: they are not quarantined as if
 * they might have reached the upstream. Runs in the background; never throws.
 */
export async function settleUnconfirmedStart(
  deps: RedeemDeps,
  job: { customerId: number; id: string },
): Promise<void> {
  const jobId = job.id;
  try {
    await retryOnConnectionError(
      async () => {
        await backToPending(deps.db, job);
        // Nothing when the job was never written (loadJob finds none) or is no longer running.
        await settleStoppedJob(deps, job, 'failed');
      },
      retryFor(LEASE_MS - 5000),
    );
  } catch (err) {
    deps.logger.warn({ err, jobId }, 'could not settle an unconfirmed redeem start; recovery will');
  }
}
