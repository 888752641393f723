// The background work of a process: the job worker, the webhook worker, the sweeper, the key
// rotation, and (on PostgreSQL) the listener that wakes them when another process writes.
import type { Config } from '../config.ts';
import { type BackgroundLoop, startBackgroundLoop } from '../core/background-loop.ts';
import type { AppContext } from '../core/context.ts';
import { INSTANCE_ID, SWEEP_MS } from '../core/instance.ts';
import { recoverOrphanedJobs } from '../core/jobs/recovery.ts';
import { type JobWorker, startJobWorker } from '../core/jobs/worker.ts';
import { redeemJobRunner } from '../core/redeem/job-runner.ts';
import { sweepOnce } from '../core/sweeper/passes.ts';
import { startRotationLoop } from '../core/sweeper/rotation.ts';
import { startWebhookWorker, type WebhookWorker } from '../core/webhooks/worker.ts';
import { type Listener, processApplicationName, startListener } from '../db/listener.ts';
import { directUrl } from '../db/pool-mode.ts';

export interface Workers {
  /** Wakes the job worker (a job was queued by this process). */
  wakeJobs(): void;
  /** Wakes the webhook worker (a redelivery was queued by this process). */
  wakeWebhooks(): void;
  /** Stops taking jobs and waits up to `graceMs` for running ones; returns how many still run. */
  stopJobs(graceMs: number): Promise<number>;
  /** Stops the sweeper and the key rotation. */
  stopLoops(): Promise<void>;
  /** Stops the listener and the webhook worker (after the apps closed). */
  stopRest(): Promise<void>;
}

/**
 * Settles the jobs of stopped processes, then starts every loop. On the embedded database only
 * this process runs, so every running job is orphaned and is settled before the first request.
 */
export async function startWorkers(ctx: AppContext, config: Config): Promise<Workers> {
  await recoverOrphanedJobs(ctx, redeemJobRunner, { all: ctx.db.kind === 'pglite' });
  let worker: JobWorker | undefined;
  let webhookWorker: WebhookWorker | undefined;
  let listener: Listener | undefined;
  // Re-encryption under the first key of the ring, when a rotation was asked for (docs/reference/operators-and-audit.md#encryption-key-rotation).
  const rotation = startRotationLoop(ctx, {
    batch: config.ENCRYPTION_ROTATION_BATCH,
    pauseMs: config.ENCRYPTION_ROTATION_PAUSE_MS,
  });
  const sweeper: BackgroundLoop = startBackgroundLoop({
    name: 'sweeper',
    intervalMs: SWEEP_MS,
    initialDelayMs: SWEEP_MS,
    logger: ctx.logger,
    pass: () => sweepOnce(ctx),
  });
  webhookWorker = startWebhookWorker(ctx, {
    pollMs: config.WORKER_POLL_MS,
    concurrency: config.WEBHOOK_CONCURRENCY,
  });
  worker = startJobWorker(ctx, redeemJobRunner, {
    concurrency: config.JOB_CONCURRENCY,
    codeConcurrency: config.CODE_CONCURRENCY,
    pollMs: config.WORKER_POLL_MS,
    onJobEnded: () => webhookWorker?.wake(),
  });
  // Woken by every process's writes (PostgreSQL; on the embedded database this process is the
  // only one, and it wakes its own workers).
  if (ctx.db.kind === 'postgres' && config.DATABASE_URL)
    listener = startListener({
      url: directUrl(config)!,
      channels: {
        redeem_job_queued: () => worker?.wake(),
        redeem_webhook_event: () => webhookWorker?.wake(),
      },
      logger: ctx.logger,
      connectTimeoutMs: config.DATABASE_TIMEOUT_MS,
      // This process wakes its own workers when it writes; only the others' writes matter here.
      ignoreFrom: processApplicationName(INSTANCE_ID),
    });
  return {
    wakeJobs: () => worker?.wake(),
    wakeWebhooks: () => webhookWorker?.wake(),
    stopJobs: (graceMs) => worker!.stop(graceMs),
    async stopLoops() {
      await Promise.all([sweeper.stop(), rotation.stop()]);
    },
    async stopRest() {
      await listener?.stop();
      await webhookWorker!.stop();
    },
  };
}
