// What the job worker and recovery run: the business that queued the job (the redeem), handed
// in by the process (src/start/workers.ts hands redeem/job-runner.ts), so that jobs/ keeps the
// rows and their life (claim, lease, finish, stop) and never imports what it runs.
import type { RedeemDeps } from '../context.ts';
import type { JobWithCodes } from './jobs.ts';

export interface ExecuteOptions {
  /** Codes sent at once (CODE_CONCURRENCY, default 5). */
  codeConcurrency?: number;
  /**
   * A sync request answers 503 unavailable once the database has been away this long
   * (DATABASE_TIMEOUT_MS, default 5000); its codes go on recording in the background.
   */
  databaseTimeoutMs?: number;
  /**
   * Told when the run starts (true) and stops (false) waiting for its customer's Citus worker, one
   * that does not answer: the job worker gives its slot to another customer's job meanwhile
   * (docs/running/citus.md#a-worker-that-stops).
   */
  onWorkerAway?: (away: boolean) => void;
  /** The job's customer when known (a claimed job): its reads go to its Citus worker alone. */
  customerId?: number;
}

export interface JobRunner {
  /**
   * Runs every pending code of a claimed job (`claimed`: the job as its claim read it). Resolves
   * whether the commit of its last outcome finished the job (else the worker finishes it).
   */
  execute(
    deps: RedeemDeps,
    jobId: string,
    opts: ExecuteOptions,
    claimed?: JobWithCodes,
  ): Promise<{ finished: boolean }>;
  /** Settles a job that stopped before finishing: `interrupted` (its process gone) or `failed` (a crash). */
  settleStopped(
    deps: RedeemDeps,
    job: { id: string; customerId: number | null },
    as: 'interrupted' | 'failed',
  ): Promise<void>;
}
