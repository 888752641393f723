// The async job worker: claims queued jobs from the database (FOR UPDATE SKIP LOCKED, so several
// processes never run one job twice), fairly across customers (docs/reference/jobs.md#fair-sharing), runs them under a
// lease, and never crashes the process. Its loop is the shared background loop.
import { isConnectionError } from '../../db/database.ts';
import { startBackgroundLoop } from '../background-loop.ts';
import type { RedeemDeps } from '../context.ts';
import { LEASE_MS } from '../instance.ts';
import { retryFor, retryOnConnectionError } from '../retry.ts';
import { onReachableWorker, UNREACHABLE } from '../work-queue.ts';
import { settleDisabledCustomerJob } from './disabled-customer.ts';
import type { JobWithCodes } from './jobs.ts';
import type { ExecuteOptions, JobRunner } from './runner.ts';
import { claimJob, finishAsyncJob, ownUnrunJobs } from './states.ts';

export interface JobWorkerOptions {
  /** Jobs run at once by this process (JOB_CONCURRENCY, default 4). */
  concurrency?: number;
  /** Codes of one job sent at once (CODE_CONCURRENCY, default 5). */
  codeConcurrency?: number;
  /** Pause between polls when no job is queued (default 250 ms). */
  pollMs?: number;
  /** Called when a job has ended and its webhook event may be waiting (wakes the webhook worker). */
  onJobEnded?: () => void;
}

export interface JobWorker {
  /** Looks for work now (called after a job is queued by this process). */
  wake(): void;
  /**
   * Stops claiming; waits up to `graceMs` (default 10000) for running jobs to finish their codes.
   * Resolves how many were still running when the grace ended (recovery settles those).
   */
  stop(graceMs?: number): Promise<number>;
  /** Jobs running in this process now. */
  running(): number;
}

/**
 * Runs one claimed job to its end: completed, or failed with every hold released. A job whose
 * database went away for longer than its lease is left running: recovery settles it as after a
 * crash once the lease has run out (nothing it recorded is lost, nothing is billed twice).
 */
export async function runJob(
  deps: RedeemDeps,
  runner: JobRunner,
  jobId: string,
  opts: ExecuteOptions = {},
  claimed?: JobWithCodes,
): Promise<void> {
  // Its customer, where known (a claimed job, or one started for a known customer): on Citus each
  // read of the job then goes to that customer's worker alone, not to every worker.
  const customerId = opts.customerId ?? claimed?.job.customerId ?? null;
  try {
    // A run that lost the database stops starting codes; once it is back the rest are sent
    // (only codes still pending: the run is safe to repeat, and a repeat reads them again), while
    // the lease is surely ours.
    let attempts = 0;
    const run = await retryOnConnectionError(
      () => runner.execute(deps, jobId, opts, attempts++ === 0 ? claimed : undefined),
      retryFor(LEASE_MS / 3),
    );
    // Usually the commit of the last outcome finished it; not when no code was left to run (a
    // repeated run), or the codes' last two outcomes were recorded at the same moment.
    if (run.finished) return;
    // A disabled customer's job: its codes still pending were not sent (docs/reference/jobs.md#disabled-customers).
    const job = { id: jobId, customerId };
    if (await retryOnConnectionError(() => settleDisabledCustomerJob(deps, job), retryFor(LEASE_MS / 3)))
      return;
    await retryOnConnectionError(() => finishAsyncJob(deps, job), retryFor(LEASE_MS / 3));
  } catch (err) {
    if (isConnectionError(err)) {
      deps.logger.warn(
        { err, jobId },
        'database unavailable during a job; recovery settles it after its lease',
      );
      return;
    }
    deps.logger.error({ err, jobId }, 'job crashed; marking it failed');
    await runner.settleStopped(deps, { id: jobId, customerId }, 'failed');
  }
}

export function startJobWorker(deps: RedeemDeps, runner: JobRunner, opts: JobWorkerOptions = {}): JobWorker {
  const config = (deps as RedeemDeps & { config?: { JOB_CONCURRENCY?: number; CODE_CONCURRENCY?: number } })
    .config;
  const concurrency = opts.concurrency ?? config?.JOB_CONCURRENCY ?? 4;
  const running = new Map<string, Promise<void>>();
  // Jobs waiting for their customer's Citus worker (one that does not answer): they keep running
  // but not their slot, so the other workers' customers' jobs go on (docs/running/citus.md#a-worker-that-stops).
  const away = new Set<string>();
  const base: ExecuteOptions = opts.codeConcurrency ? { codeConcurrency: opts.codeConcurrency } : {};
  let claimLost = false;

  const start = (jobId: string, claimed?: JobWithCodes) => {
    const execute: ExecuteOptions = {
      ...base,
      ...(claimed ? { customerId: claimed.job.customerId } : {}),
      onWorkerAway(isAway) {
        if (!isAway) return void away.delete(jobId);
        away.add(jobId);
        loop.wake();
      },
    };
    const run = runJob(deps, runner, jobId, execute, claimed)
      .then(() => opts.onJobEnded?.())
      .catch((err) => deps.logger.error({ err, jobId }, 'job could not be settled; the sweeper will'))
      .finally(() => {
        running.delete(jobId);
        away.delete(jobId);
        loop.wake();
      });
    running.set(jobId, run);
  };

  const loop = startBackgroundLoop({
    name: 'job worker',
    intervalMs: opts.pollMs ?? 250,
    logger: deps.logger,
    async pass(signal) {
      if (claimLost) {
        // Read on every worker: while one does not answer, those of the others start, and the
        // stopped worker's are looked for again at the next pass; the claims go on meanwhile.
        const own = await onReachableWorker(() => ownUnrunJobs(deps, new Set(running.keys())));
        if (own !== UNREACHABLE) {
          for (const jobId of own.ids) start(jobId);
          claimLost = own.partial;
        }
      }
      while (!signal.aborted && running.size - away.size < concurrency) {
        let claimed: JobWithCodes | null;
        try {
          claimed = await claimJob(deps);
        } catch (err) {
          claimLost ||= isConnectionError(err);
          throw err;
        }
        if (!claimed) return;
        start(claimed.job.id, claimed);
      }
    },
  });

  return {
    wake: () => loop.wake(),
    running: () => running.size,
    async stop(graceMs = 10_000) {
      await loop.stop();
      let grace: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...running.values()]),
        new Promise((r) => {
          grace = setTimeout(r, graceMs);
        }),
      ]);
      clearTimeout(grace);
      return running.size;
    },
  };
}
