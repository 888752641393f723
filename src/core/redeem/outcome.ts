// Recording one code's outcome: its capture or release and its stock state in one commit
// (redeem_record_outcome, src/db/functions/redeem.sql); the commit of a job's last outcome also
// finishes the job. The runs (run.ts) and recovery (core/jobs/recovery.ts) both record through it.
import { type AccountRow, type AccountState, accountStateFrom } from '../accounts/accounts.ts';
import { utcDay } from '../clock.ts';
import type { RedeemDeps } from '../context.ts';
import { INSTANCE_ID, LEASE_MS } from '../instance.ts';
import {
  BILLED_STATUSES,
  dispositionOf,
  ERROR_CODE_OF,
  type JobCodeRow,
  type JobRow,
  STOCK_STATE_OF,
} from '../jobs/jobs.ts';

/**
 * How the commit of a job's last outcome finishes the job: a sync job with its key (its request's
 * id goes with the key's answer), an async job with its redeem.completed event (this id).
 */
export type FinishWith = { requestId: string } | { eventId: string };

/** What the commit of a job's last outcome did: finished a sync job (its answer), or an async one. */
export type Finished = { sync: FinishedSync } | { async: true };

/** A sync job finished by the commit of its last outcome: what the answer is made of. */
export interface FinishedSync {
  status: number;
  codes: JobCodeRow[];
  account: AccountState;
}

export interface Outcome {
  status: JobCodeRow['status'] & string;
  unknown?: boolean;
  category?: string | null;
  uc?: number | null;
}

/** What redeem_record_outcome answers. */
interface OutcomeRow {
  recorded: boolean;
  wallet_micros?: number;
  finished?: number;
  finished_async?: boolean;
  codes?: JobCodeRow[];
  account?: AccountRow;
}

/**
 * Records a code's outcome with its capture or release and its stock state, in one commit. With
 * `finish` (a job's run), the commit of the job's last outcome also finishes the job: a sync job
 * and its key, with what the answer needs; an async job and its webhook event.
 */
export async function recordOutcome(
  deps: Pick<RedeemDeps, 'db' | 'clock' | 'metrics'>,
  job: Pick<JobRow, 'id' | 'source' | 'mode' | 'customerId'>,
  row: Pick<JobCodeRow, 'position'>,
  outcome: Outcome,
  fromState: 'pending' | 'sending',
  finish: FinishWith | null = null,
): Promise<Finished | null> {
  const status = outcome.status;
  const billed = BILLED_STATUSES.has(status);
  const disposition = dispositionOf(status, outcome.unknown === true, job.source);
  const now = deps.clock.now();
  const sync = finish !== null && 'requestId' in finish ? finish : null;
  const r = await deps.db.query<{ r: OutcomeRow }>(
    `select redeem_record_outcome($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                                  $18, $19) as r`,
    [
      job.id,
      row.position,
      fromState,
      status,
      ERROR_CODE_OF[status],
      disposition,
      billed,
      outcome.category ?? null,
      outcome.uc ?? null,
      now,
      new Date(now.getTime() + LEASE_MS),
      STOCK_STATE_OF[disposition],
      sync !== null,
      finish !== null && 'eventId' in finish ? finish.eventId : null,
      INSTANCE_ID,
      job.customerId,
      job.mode,
      utcDay(now),
      sync?.requestId ?? null,
    ],
    'redeem_record_outcome',
  );
  const recorded = r.rows[0]!.r;
  // Recorded already (by recovery racing a slow process): never billed, nor counted, twice.
  if (!recorded.recorded) return null;
  // Counted after the commit, so a rolled-back outcome counts nothing.
  deps.metrics?.codeOutcome({
    mode: job.mode,
    status,
    disposition,
    billed,
    walletMicros: recorded.wallet_micros ?? 0,
  });
  if (recorded.finished_async) return { async: true };
  if (recorded.finished === undefined) return null;
  return {
    sync: {
      status: recorded.finished,
      codes: recorded.codes!,
      account: accountStateFrom(job.customerId, recorded.account!),
    },
  };
}
