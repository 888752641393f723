// Running a redeem's codes and finishing it: the phases after phase 1 (redeem.ts).
//   Per code: mark it out with the upstream (committed), call the activator outside any
//   transaction, then record the outcome with its capture or release in one transaction.
//   Last: finish the job and make its key replayable (async: its webhook event in the outbox).
import { setTimeout as sleep } from 'node:timers/promises';
import { isConnectionError, isPgError, PG_UNIQUE_VIOLATION, type Queryable } from '../db/database.ts';
import { ApiError, databaseUnavailable } from '../http/errors.ts';
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
import { settleStoppedJob } from './recovery.ts';
import type { Caller, RedeemDeps } from './redeem.ts';
import { setStockState } from './stock.ts';
import { enqueueJobEvent } from './webhook-events.ts';

/** Codes of one job sent to the upstream at once, unless CODE_CONCURRENCY says otherwise. */
export const CODE_CONCURRENCY = 5;

/** What a job's run knows of its lease: until when (clock ms) no one else may take the job. */
interface Lease {
  until: number;
}

export interface ExecuteOptions {
  /** Codes sent at once (CODE_CONCURRENCY, default 5). */
  codeConcurrency?: number;
  /**
   * A sync request answers 503 unavailable once the database has been away this long
   * (DATABASE_TIMEOUT_MS, default 5000); its codes go on recording in the background.
   */
  databaseTimeoutMs?: number;
}

/** Runs every pending code of a job, a few at a time. Returns how many requests this run billed. */
export async function executeJob(
  deps: RedeemDeps,
  jobId: string,
  opts: ExecuteOptions = {},
): Promise<number> {
  const config = deps.config;
  const codeConcurrency = opts.codeConcurrency ?? config?.CODE_CONCURRENCY ?? CODE_CONCURRENCY;
  const databaseTimeoutMs = opts.databaseTimeoutMs ?? config?.DATABASE_TIMEOUT_MS ?? 5000;
  const job = await loadJob(deps.db, jobId);
  if (!job) throw new Error(`job ${jobId} not found`);
  if (job.isAsync && job.startedAt) deps.metrics?.jobStarted(job.mode, +job.startedAt - +job.createdAt);
  const pending = (await loadJobCodes(deps.db, jobId)).filter((r) => r.state === 'pending');
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
  };
  let billed = 0;
  let next = 0;
  const heartbeat = setInterval(() => {
    void extendLease(deps, jobId, lease).catch((err) =>
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
            if (await attemptCode(deps, job, row, retry)) billed += 1;
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
    return billed;
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
      .then(() => settleStoppedJob(deps, jobId, 'failed'))
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
  for (let attempt = 0; ; attempt++) {
    const startedAt = deps.clock.now().getTime();
    try {
      const result = await fn();
      retry.failingSince = null;
      return result;
    } catch (err) {
      const now = deps.clock.now().getTime();
      const delay = Math.min(2000, 100 * 2 ** attempt);
      if (!isConnectionError(err) || now + delay >= retry.lease.until) throw err;
      retry.failingSince ??= startedAt;
      // Answer before the next try would take the request past its deadline.
      if (retry.onStalled && now + delay - retry.failingSince >= retry.onStalled.afterMs)
        retry.onStalled.call();
      if (attempt === 0) deps.logger.warn({ err }, `database unavailable while ${what}; retrying`);
      await sleep(delay);
    }
  }
}

async function extendLease(deps: RedeemDeps, jobId: string, lease: Lease) {
  const until = deps.clock.now().getTime() + LEASE_MS;
  const r = await deps.db.query('update jobs set lease_expires_at = $3 where id = $1 and lease_owner = $2', [
    jobId,
    INSTANCE_ID,
    new Date(until),
  ]);
  // Taken over (recovery found the lease run out): nothing of this job is ours to write any more.
  lease.until = r.rowCount > 0 ? Math.max(lease.until, until) : 0;
}

/** One code: mark it out with the upstream, call the activator, record the outcome. Returns billed. */
async function attemptCode(
  deps: RedeemDeps,
  job: JobRow,
  row: JobCodeRow,
  retry: RetryState,
): Promise<boolean> {
  const { db, clock } = deps;
  const code = decryptCode(deps.codeKey, row.codeEncrypted!, {
    table: 'job_codes',
    customerId: job.customerId,
    mode: job.mode,
    codeHash: row.codeHash,
  });
  // The mark carries its own time, so a retry after a lost answer recognises its own mark.
  const markedAt = clock.now();
  try {
    // Only while this process still owns the running job: once recovery has taken it over (a
    // lost lease), its pending codes were released and must not be sent.
    const marked = await whileLeased(deps, retry, 'marking a code as sent', () =>
      db.query(
        `update job_codes set state = 'sending', started_at = $3
          where job_id = $1 and position = $2
            and (state = 'pending' or (state = 'sending' and started_at = $3))
            and exists (select 1 from jobs where id = $1 and status = 'running' and lease_owner = $4)`,
        [job.id, row.position, markedAt, INSTANCE_ID],
        'code_mark_sending',
      ),
    );
    if (marked.rowCount === 0) return false;
  } catch (err) {
    if (!isPgError(err, PG_UNIQUE_VIOLATION)) throw err;
    // The same code is out with the upstream for another request: never send it twice at once.
    await whileLeased(deps, retry, 'recording an outcome', () =>
      recordOutcome(deps, job, row, { status: 'failed', unknown: false }, 'pending'),
    );
    return false;
  }
  let outcome: {
    status: JobCodeRow['status'] & string;
    unknown?: boolean;
    category?: string | null;
    uc?: number | null;
  };
  try {
    outcome = await deps
      .activatorFor(job.mode)
      .activate({ mode: job.mode, code, playerId: job.playerId, customerId: job.customerId });
  } catch (err) {
    // The code may have reached the upstream: its fate is unknown until a status check.
    deps.logger.warn({ err, jobId: job.id, code: `…${row.last4}` }, 'activator call failed');
    outcome = { status: 'failed', unknown: true };
  }
  // The answer is known: it is recorded as soon as the database lets us, while the job is ours.
  await whileLeased(deps, retry, 'recording an outcome', () =>
    recordOutcome(deps, job, row, outcome, 'sending'),
  );
  return BILLED_STATUSES.has(outcome.status);
}

/** Records a code's outcome with its capture or release and its stock state, in one transaction. */
export async function recordOutcome(
  deps: Pick<RedeemDeps, 'db' | 'clock' | 'metrics'>,
  job: Pick<JobRow, 'id' | 'source' | 'mode'>,
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
      'code_outcome',
    );
    // Recorded already (by recovery racing a slow process): never bill twice.
    if (updated.rowCount === 0) return null;
    let walletMicros = 0;
    if (billed) walletMicros = await captureOne(q, job.id, deps.clock);
    else await releaseOne(q, job.id);
    if (row.stockId !== null) await setStockState(q, [row.stockId], STOCK_STATE_OF[disposition], deps.clock);
    await q.query(
      'update jobs set lease_expires_at = greatest(lease_expires_at, $2) where id = $1',
      [job.id, new Date(deps.clock.now().getTime() + LEASE_MS)],
      'job_lease_keep',
    );
    return walletMicros;
  };
  const walletMicros = tx ? await work(tx) : await deps.db.transaction(work);
  // Counted after the commit, so a rolled-back outcome counts nothing (a caller's `tx`: once recorded in it).
  if (walletMicros !== null)
    deps.metrics?.codeOutcome({ mode: job.mode, status, disposition, billed, walletMicros });
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
  // One statement, so atomic on its own: the job, then its key found by primary key (the job
  // names it), only while the job is still ours to finish.
  const r = await deps.db.query<{ finished: number }>(
    `with finished as (
       update jobs set status = 'completed', finished_at = $2, lease_owner = null
        where id = $1 and status = 'running' and lease_owner = $3 and customer_id = $4 and mode = $5
       returning customer_id, mode, idempotency_key
     ), answered as (
       update idempotency_keys k set state = 'done', response_status = $6, response_request_id = $7
         from finished f
        where k.customer_id = f.customer_id and k.mode = f.mode and k.key = f.idempotency_key and k.job_id = $1
       returning 1
     )
     select (select count(*) from finished)::int as finished, (select count(*) from answered)::int as answered`,
    [jobId, deps.clock.now(), INSTANCE_ID, caller.customerId, caller.mode, status, requestId],
    'sync_job_finish',
  );
  if (r.rows[0]!.finished === 0)
    throw new ApiError(
      'unavailable',
      'the redeem was interrupted; retry with the same Idempotency-Key',
      {},
      { 'Retry-After': '1' },
    );
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
