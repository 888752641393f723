// The async job worker: claims queued jobs from the database (FOR UPDATE SKIP LOCKED, so several
// processes never run one job twice), runs them under a lease, and never crashes the process.
import { INSTANCE_ID, LEASE_MS } from './instance.ts';
import { settleStoppedJob } from './recovery.ts';
import type { RedeemDeps } from './redeem.ts';
import { executeJob, finishAsyncJob } from './redeem-run.ts';

export interface JobWorkerOptions {
  /** Jobs run at once by this process (default 4); each runs up to 5 codes at once. */
  concurrency?: number;
  /** Pause between polls when no job is queued (default 250 ms). */
  pollMs?: number;
  /** Called when a job has ended and its webhook event may be waiting (wakes the webhook worker). */
  onJobEnded?: () => void;
}

export interface JobWorker {
  /** Looks for work now (called after a job is queued by this process). */
  wake(): void;
  /** Stops claiming; waits up to `graceMs` for running jobs (the rest are recovered later). */
  stop(graceMs?: number): Promise<void>;
}

/** Claims the oldest queued job for this process, or returns null. */
export async function claimJob(deps: RedeemDeps): Promise<string | null> {
  const now = deps.clock.now();
  const r = await deps.db.query<{ id: string }>(
    `update jobs set status = 'running', lease_owner = $1, lease_expires_at = $2, started_at = $3
      where id = (select id from jobs where status = 'queued' order by created_at, id limit 1 for update skip locked)
      returning id`,
    [INSTANCE_ID, new Date(now.getTime() + LEASE_MS), now],
  );
  return r.rows[0]?.id ?? null;
}

/** Runs one claimed job to its end: completed, or failed with every hold released. */
export async function runJob(deps: RedeemDeps, jobId: string): Promise<void> {
  try {
    await executeJob(deps, jobId);
    await finishAsyncJob(deps, jobId);
  } catch (err) {
    deps.logger.error({ err, jobId }, 'job crashed; marking it failed');
    await settleStoppedJob(deps, jobId, 'failed');
  }
}

export function startJobWorker(deps: RedeemDeps, opts: JobWorkerOptions = {}): JobWorker {
  const concurrency = opts.concurrency ?? 4;
  const pollMs = opts.pollMs ?? 250;
  const running = new Set<Promise<void>>();
  let stopped = false;
  let polling = false;
  let timer: NodeJS.Timeout | undefined;
  let failures = 0;

  const schedule = (ms: number) => {
    if (stopped) return;
    clearTimeout(timer);
    timer = setTimeout(poll, ms);
  };

  async function poll() {
    if (stopped || polling) return;
    polling = true;
    try {
      while (!stopped && running.size < concurrency) {
        const jobId = await claimJob(deps);
        if (!jobId) break;
        const run = runJob(deps, jobId)
          .then(() => opts.onJobEnded?.())
          .catch((err) => deps.logger.error({ err, jobId }, 'job could not be settled; the sweeper will'))
          .finally(() => {
            running.delete(run);
            schedule(0);
          });
        running.add(run);
      }
      failures = 0;
      schedule(pollMs);
    } catch (err) {
      // Database away or similar: back off and go on.
      failures += 1;
      deps.logger.error({ err }, 'job worker poll failed');
      schedule(Math.min(30_000, pollMs * 2 ** failures));
    } finally {
      polling = false;
    }
  }

  schedule(0);
  return {
    wake: () => schedule(0),
    async stop(graceMs = 10_000) {
      stopped = true;
      clearTimeout(timer);
      let grace: NodeJS.Timeout | undefined;
      await Promise.race([
        Promise.allSettled([...running]),
        new Promise((r) => {
          grace = setTimeout(r, graceMs);
        }),
      ]);
      clearTimeout(grace);
    },
  };
}
