// Running a redeem's codes and finishing it: the phases after phase 1 (start.ts).
//   Per code: mark it out with the upstream (committed; phase 1 marked a sync job's first codes
//   already), call the activator outside any transaction, then record the outcome with its
//   capture or release, and the activator's memory when its answer hands one back, in one commit
//   (redeem_record_outcome, src/db/functions/redeem.sql). The commit of a job's last outcome also
//   finishes the job: a sync job with its key made replayable, an async job with its webhook
//   event in the outbox.
import { isWorkerUnreachable } from '../../db/connection-errors.ts';
import { isPgError, PG_UNIQUE_VIOLATION } from '../../db/database.ts';
import { CODE_CONCURRENCY, type RedeemDeps } from '../context.ts';
import { decryptCode } from '../crypto/code-crypto.ts';
import { databaseUnavailable } from '../errors.ts';
import { newEventId } from '../ids.ts';
import { LEASE_MS } from '../instance.ts';
import { markSending } from '../jobs/codes.ts';
import { type JobRow, type JobWithCodes, loadJobWithCodes } from '../jobs/jobs.ts';
import type { ExecuteOptions } from '../jobs/runner.ts';
import { extendLease, type Lease } from '../jobs/states.ts';
import { retryOnConnectionError } from '../retry.ts';
import { type Finished, type FinishedSync, type FinishWith, type Outcome, recordOutcome } from './outcome.ts';
import { isBilled } from './outcomes.ts';
import { settleStoppedJob } from './settle.ts';

/** A code to attempt, as its job's run holds it (the code itself in memory, never logged). */
export interface CodeToRun {
  position: number;
  /** The code itself (a stored one is decrypted only when its turn comes). */
  code: () => string;
  last4: string;
  stockId: number | null;
  category: string | null;
  uc: number | null;
  /** `sending`: phase 1 marked it out with the upstream already. */
  state: 'pending' | 'sending';
}

/** What a run needs to know of its job. */
export type RunningJob = Pick<
  JobRow,
  'id' | 'customerId' | 'mode' | 'playerId' | 'source' | 'isAsync' | 'leaseExpiresAt' | 'channel'
> & {
  /** Known from phase 1: how many outcomes may charge the wallet (recordOutcome's routing on Citus). */
  walletCharges?: number;
};

/**
 * Runs every pending code of a job (the job worker). Returns how many requests this run billed,
 * and whether the commit of its last outcome finished the job (else the caller finishes it).
 */
export async function executeJob(
  deps: RedeemDeps,
  jobId: string,
  opts: ExecuteOptions = {},
  claimed?: JobWithCodes,
): Promise<{ billed: number; finished: boolean }> {
  // The claim read the job and its codes with the same statement that took it.
  const loaded = claimed ?? (await loadJobWithCodes(deps.db, jobId, opts.customerId ?? null));
  if (!loaded) throw new Error(`job ${jobId} not found`);
  const job = loaded.job;
  if (job.isAsync && job.startedAt) deps.metrics?.jobStarted(job.mode, +job.startedAt - +job.createdAt);
  const pending = loaded.codes
    .filter((r) => r.state === 'pending')
    .map((r) => ({
      position: r.position,
      code: () =>
        decryptCode(deps.codeKey, r.codeEncrypted!, {
          table: 'job_codes',
          customerId: job.customerId,
          mode: job.mode,
          codeHash: r.codeHash,
        }),
      last4: r.last4,
      stockId: r.stockId,
      category: r.category,
      uc: r.uc,
      state: 'pending' as const,
    }));
  const run = await runCodes(deps, job, pending, { eventId: newEventId() }, opts);
  return { billed: run.billed, finished: run.finished !== null };
}

/**
 * Runs a sync job phase 1 has just written (its codes in hand, the first ones marked), finishing
 * it with its last outcome. `finished` is null when that did not happen (the job was taken over,
 * or no outcome was left to record it): the caller then finishes it with finishSyncJob.
 */
export async function runSyncJob(
  deps: RedeemDeps,
  job: RunningJob,
  todo: CodeToRun[],
  requestId: string,
  opts: ExecuteOptions = {},
): Promise<{ billed: number; finished: FinishedSync | null }> {
  const run = await runCodes(deps, job, todo, { requestId }, opts);
  return { billed: run.billed, finished: run.finished && 'sync' in run.finished ? run.finished.sync : null };
}

async function runCodes(
  deps: RedeemDeps,
  job: RunningJob,
  pending: CodeToRun[],
  finish: FinishWith,
  opts: ExecuteOptions,
): Promise<{ billed: number; finished: Finished | null }> {
  const config = deps.config;
  const codeConcurrency = opts.codeConcurrency ?? config?.CODE_CONCURRENCY ?? CODE_CONCURRENCY;
  const databaseTimeoutMs = opts.databaseTimeoutMs ?? config?.DATABASE_TIMEOUT_MS ?? 5000;
  const jobId = job.id;
  const lease: Lease = { until: job.leaseExpiresAt?.getTime() ?? 0 };
  // A sync request must not hang while the database is away: it answers 503 after
  // databaseTimeoutMs of failures, and this run goes on in the background (see below).
  let stalled: (() => void) | null = null;
  let answered = false;
  const stall = new Promise<never>((_, reject) => {
    stalled = () => {
      // The request has its answer: codes not started yet are left for the retry.
      answered = true;
      reject(new DatabaseStalled());
    };
  });
  stall.catch(() => undefined);
  const retry: RetryState = {
    lease,
    failingSince: null,
    onStalled: job.isAsync ? null : { afterMs: databaseTimeoutMs, call: () => stalled?.() },
    away: 0,
    onWorkerAway: opts.onWorkerAway,
  };
  let billed = 0;
  let finished: Finished | null = null;
  let next = 0;
  const heartbeat = setInterval(() => {
    void extendLease(deps, job, lease).catch((err) =>
      deps.logger.warn({ err, jobId }, 'lease heartbeat failed'),
    );
  }, LEASE_MS / 3);
  const work = (async () => {
    try {
      // After a failure no new code is started, and the codes already out are let finish, so
      // whoever settles the job afterwards sees every attempt recorded.
      let failure: { error: unknown } | null = null;
      const worker = async () => {
        while (next < pending.length && !failure && !answered) {
          const row = pending[next++]!;
          try {
            const attempt = await attemptCode(deps, job, row, retry, finish);
            if (attempt.billed) billed += 1;
            finished ??= attempt.finished;
          } catch (error) {
            failure ??= { error };
          }
        }
      };
      await Promise.all(Array.from({ length: Math.min(codeConcurrency, pending.length) }, worker));
      if (failure) throw (failure as { error: unknown }).error;
    } finally {
      clearInterval(heartbeat);
    }
    return { billed, finished };
  })();
  if (job.isAsync) return work;
  try {
    return await Promise.race([work, stall]);
  } catch (err) {
    if (!(err instanceof DatabaseStalled)) throw err;
    // The request answers now; once every code out has its outcome recorded (or the lease ran
    // out), the job is settled so a retry with the same key resumes from the recorded outcomes.
    work
      .catch(() => undefined)
      .then(() => settleStoppedJob(deps, job, 'failed'))
      .catch((e: unknown) =>
        deps.logger.warn({ err: e, jobId }, 'could not settle a stalled redeem; recovery will'),
      );
    throw databaseUnavailable();
  }
}

class DatabaseStalled extends Error {
  override name = 'DatabaseStalled';
}

interface RetryState {
  lease: Lease;
  /** Since when (clock ms) database calls of this run have been failing. */
  failingSince: number | null;
  onStalled: { afterMs: number; call: () => void } | null;
  /** Calls of this run waiting for a Citus worker that does not answer, and whom to tell. */
  away: number;
  onWorkerAway: ((away: boolean) => void) | undefined;
}

/**
 * Runs `fn`, retrying it while the database is away (connection errors only) and the job's
 * lease is still this run's: what it writes is then still ours to write. Anything else, or a
 * lease that ran out, is thrown; recovery then settles the job as after a crash.
 */
async function whileLeased<T>(
  deps: RedeemDeps,
  retry: RetryState,
  what: string,
  fn: () => Promise<T>,
): Promise<T> {
  const startedAt = deps.clock.now().getTime();
  // Counted once per call while it waits for a Citus worker that does not answer.
  let waitsForWorker = false;
  try {
    const result = await retryOnConnectionError(fn, {
      now: () => deps.clock.now().getTime(),
      deadline: () => retry.lease.until - 1,
      onRetry(err, attempt, delay) {
        if (!waitsForWorker && isWorkerUnreachable(err)) {
          waitsForWorker = true;
          if (retry.away++ === 0) retry.onWorkerAway?.(true);
        }
        const now = deps.clock.now().getTime();
        retry.failingSince ??= startedAt;
        // Answer before the next try would take the request past its deadline.
        if (retry.onStalled && now + delay - retry.failingSince >= retry.onStalled.afterMs)
          retry.onStalled.call();
        if (attempt === 0) deps.logger.warn({ err }, `database unavailable while ${what}; retrying`);
      },
    });
    retry.failingSince = null;
    return result;
  } finally {
    if (waitsForWorker && --retry.away === 0) retry.onWorkerAway?.(false);
  }
}

/**
 * One code: mark it out with the upstream (unless phase 1 did), call the activator, record the
 * outcome. Returns whether it was billed, and the finished job when its commit finished it.
 */
async function attemptCode(
  deps: RedeemDeps,
  job: RunningJob,
  row: CodeToRun,
  retry: RetryState,
  finish: FinishWith,
): Promise<{ billed: boolean; finished: Finished | null }> {
  const { db, clock } = deps;
  const code = row.code();
  // The state the outcome is recorded from: `sending` once the code is out with the upstream.
  let from: 'pending' | 'sending' = 'sending';
  if (row.state === 'pending') {
    // The mark carries its own time, so a retry after a lost answer recognises its own mark.
    const markedAt = clock.now();
    try {
      // Only while this process still owns the running job: once recovery has taken it over (a
      // lost lease), its pending codes were released and must not be sent. Nor is a code of an
      // async job whose customer was disabled (docs/reference/jobs.md#disabled-customers): the codes already out finish, the
      // rest are released by settleDisabledCustomerJob (core/jobs/disabled-customer.ts).
      const marked = await whileLeased(deps, retry, 'marking a code as sent', () =>
        markSending(db, job, row.position, markedAt),
      );
      if (marked.rowCount === 0) return { billed: false, finished: null };
    } catch (err) {
      if (!isPgError(err, PG_UNIQUE_VIOLATION)) throw err;
      from = 'pending';
    }
  }
  let outcome: Outcome;
  if (from === 'pending') {
    // The same code is out with the upstream for another request: never send it twice at once.
    outcome = { status: 'failed', unknown: false };
  } else {
    try {
      outcome = await deps
        .activatorFor(job.mode)
        .activate({ mode: job.mode, code, playerId: job.playerId, customerId: job.customerId });
    } catch (err) {
      // The code may have reached the upstream: its fate is unknown until a status check.
      deps.logger.warn({ err, jobId: job.id, code: `…${row.last4}` }, 'activator call failed');
      outcome = { status: 'failed', unknown: true };
    }
  }
  // The answer is known: it is recorded as soon as the database lets us, while the job is ours,
  // with the activator's memory it rests on (an activation remembered already is code_used).
  const recorded = await whileLeased(deps, retry, 'recording an outcome', () =>
    recordOutcome(deps, job, row, outcome, from, finish),
  );
  // Recorded already: most likely by this very commit, whose answer the connection lost. Counted
  // by the rule it was recorded with (a bot redeem's outcome is never billed).
  if (!recorded) return { billed: isBilled(outcome.status, job.channel), finished: null };
  return { billed: recorded.billed, finished: recorded.finished };
}
