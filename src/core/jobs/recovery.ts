// Finding what a stopped process left behind (docs/reference/jobs.md#interrupted-jobs, docs/reference/idempotency.md#answers): the running jobs
// without a live owner, taken over and handed to the runner that settles them (the redeem's
// settleStoppedJob, handed in by the process: jobs/ never imports what it runs).

import type { RedeemDeps } from '../context.ts';
import type { JobRunner } from './runner.ts';
import { takeOverOrphanedJobs } from './states.ts';

/**
 * Takes over and settles every job that is running without a live owner: with `all`, every
 * running job (the embedded database at start, where only this process runs); otherwise those
 * whose lease has run out. Returns the ids settled.
 */
export async function recoverOrphanedJobs(
  deps: RedeemDeps,
  runner: Pick<JobRunner, 'settleStopped'>,
  opts: { all: boolean },
): Promise<string[]> {
  const now = deps.clock.now();
  const settled: string[] = [];
  for (const job of await takeOverOrphanedJobs(deps.db, now, opts)) {
    try {
      await runner.settleStopped(deps, job, 'interrupted');
      settled.push(job.id);
    } catch (err) {
      deps.logger.error(
        { err, jobId: job.id },
        'could not settle an interrupted job; the sweeper will try again',
      );
    }
  }
  return settled;
}
