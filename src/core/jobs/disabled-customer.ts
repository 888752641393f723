// A disabled customer's async jobs are not run (docs/reference/jobs.md#disabled-customers): a queued job is claimed as usual,
// but no code of it is marked out with the upstream (the mark in core/redeem/run.ts refuses an
// async job of a disabled customer), so nothing is sent; a running job's codes already out
// finish and are recorded as usual. Then the job is settled here: `failed` with
// `unknown_customer`, every code still pending released (its hold refunded, its stock available
// again), and no webhook event (its webhooks are not sent either: the delivery claim skips a
// disabled customer's events).
import { releaseOne } from '../billing/holds.ts';
import type { RedeemDeps } from '../context.ts';
import { setStockState } from '../stock/stock.ts';
import { jobCustomer, loadJobCodes } from './jobs.ts';
import { stopJob } from './states.ts';

export const DISABLED_CUSTOMER_ERROR = {
  error_code: 'unknown_customer',
  message: 'the customer was disabled; codes not yet sent were not sent and their holds were released',
} as const;

/**
 * Ends an async job of a disabled customer whose codes out have all finished. Returns false (and
 * changes nothing) when the customer is active, the job has ended, or a code is still out.
 */
export async function settleDisabledCustomerJob(
  deps: Pick<RedeemDeps, 'db' | 'clock'>,
  stopped: { id: string; customerId: number | null },
): Promise<boolean> {
  const jobId = stopped.id;
  return deps.db.transaction(async (tx) => {
    // Named by its customer where the caller knows it: on Citus, that customer's worker alone.
    const customerId = stopped.customerId ?? (await jobCustomer(tx, jobId));
    if (customerId === null) return false;
    const r = await tx.query<{ status: string; disabled: boolean }>(
      `select j.status, c.disabled_at is not null as disabled
         from jobs j join customers c on c.id = j.customer_id
        where j.customer_id = $1 and j.id = $2 and j.is_async
          for update of j`,
      [customerId, jobId],
    );
    const job = r.rows[0];
    if (!job?.disabled || (job.status !== 'running' && job.status !== 'queued')) return false;
    const codes = await loadJobCodes(tx, jobId, customerId);
    if (codes.some((c) => c.state === 'sending')) return false;
    const pending = codes.filter((c) => c.state === 'pending');
    for (const _ of pending) await releaseOne(tx, customerId, jobId);
    const stockIds = pending.flatMap((c) => (c.stockId === null ? [] : [c.stockId]));
    await setStockState(tx, customerId, stockIds, 'available', deps.clock);
    await stopJob(tx, { customerId, id: jobId }, 'failed', DISABLED_CUSTOMER_ERROR, deps.clock.now());
    return true;
  });
}
