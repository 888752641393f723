// The sweeper's passes: the periodic work of every process (recovery of stopped jobs, key purge,
// quarantine checks, retention), run together by one background loop.
import { isConnectionError } from '../../db/database.ts';
import { pruneUpdates } from '../bot/updates.ts';
import type { AppContext } from '../context.ts';
import { recoverOrphanedJobs } from '../jobs/recovery.ts';
import { purgeExpiredKeys } from '../redeem/idempotency-keys.ts';
import { redeemJobRunner } from '../redeem/job-runner.ts';
import { sweepRequestLog } from '../requests/request-log.ts';
import { checkQuarantined } from './quarantine-check.ts';
import { sweepRetention } from './retention.ts';

/**
 * The sweeper's passes, run together every SWEEP_MS by one background loop. Another periodic
 * task is one more entry here. A pass that fails is logged and retried at the next sweep; while
 * the database is away the whole sweep backs off.
 */
export interface SweepPass {
  name: string;
  run(ctx: AppContext): Promise<unknown>;
}

export const SWEEP_PASSES: SweepPass[] = [
  // Jobs whose process stopped (their lease ran out): settled as interrupted.
  { name: 'job recovery', run: (ctx) => recoverOrphanedJobs(ctx, redeemJobRunner, { all: false }) },
  { name: 'idempotency key purge', run: (ctx) => purgeExpiredKeys(ctx.db, ctx.clock.now()) },
  { name: 'quarantine check', run: (ctx) => checkQuarantined(ctx) },
  // The bot's record of updates acted on: Telegram redelivers an update for 24 hours at most.
  {
    name: 'bot update purge',
    run: (ctx) => pruneUpdates(ctx.db, new Date(ctx.clock.now().getTime() - 7 * 24 * 3600 * 1000)),
  },
  // Code ciphertexts of old finished jobs, old webhook events (docs/reference/running.md#retention).
  {
    name: 'retention',
    run: (ctx) => sweepRetention(ctx.db, ctx.clock, ctx.config.RETENTION_DAYS),
  },
  // The request log's rows and daily counts older than REQUEST_LOG_RETENTION_DAYS.
  {
    name: 'request log retention',
    run: (ctx) => sweepRequestLog(ctx.db, ctx.clock.now(), ctx.config.REQUEST_LOG_RETENTION_DAYS),
  },
];

/** One sweep: every pass at once; throws (so the loop backs off) when the database is away. */
export async function sweepOnce(ctx: AppContext, passes: readonly SweepPass[] = SWEEP_PASSES): Promise<void> {
  const results = await Promise.allSettled(passes.map((p) => p.run(ctx)));
  let lost: unknown;
  results.forEach((r, i) => {
    if (r.status === 'fulfilled') return;
    if (isConnectionError(r.reason)) lost ??= r.reason;
    else ctx.logger.error({ err: r.reason, pass: passes[i]!.name }, `sweep pass "${passes[i]!.name}" failed`);
  });
  if (lost) throw lost;
}
