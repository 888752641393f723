// Recording one code's outcome: its capture or release, its stock state and the activator's
// memory an activated answer hands back, in one commit (redeem_record_outcome,
// src/db/functions/redeem.sql); the commit of a job's last outcome also finishes the job. The runs
// (run.ts) and settling a stopped redeem (settle.ts) both record through it.
import { shardedByCustomer } from '../../db/citus.ts';
import type { Queryable } from '../../db/database.ts';
import { type AccountRow, type AccountState, accountStateFrom } from '../accounts/accounts.ts';
import type { ActivationMemory } from '../activator.ts';
import { utcDay } from '../clock.ts';
import type { RedeemDeps } from '../context.ts';
import { INSTANCE_ID, LEASE_MS } from '../instance.ts';
import type { JobCodeRow, JobRow } from '../jobs/jobs.ts';
import { retryOnDeadlock } from '../retry.ts';
import type { ActivationStatus, Disposition } from '../vocabulary.ts';
import { dispositionOf, ERROR_CODE_OF, isBilled, STOCK_STATE_OF } from './outcomes.ts';

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
  /** The activator's memory an activated answer rests on: written by the outcome's commit. */
  memory?: ActivationMemory;
}

/** What was recorded: the outcome's billing, and the job when its commit finished it. */
export interface Recorded {
  status: ActivationStatus;
  billed: boolean;
  finished: Finished | null;
}

/** What redeem_record_outcome answers. */
interface OutcomeRow {
  recorded: boolean;
  wallet_micros?: number;
  /** The memory was there already: the outcome recorded was code_used. */
  remembered?: boolean;
  finished?: number;
  finished_async?: boolean;
  codes?: JobCodeRow[];
  account?: AccountRow;
}

/** How an outcome is recorded: its error code, disposition, billing and stock state. */
function columnsOf(status: ActivationStatus, unknown: boolean, job: Pick<JobRow, 'source' | 'channel'>) {
  const disposition: Disposition = dispositionOf(status, unknown, job.source);
  return {
    status,
    errorCode: ERROR_CODE_OF[status],
    disposition,
    billed: isBilled(status, job.channel),
    stockState: STOCK_STATE_OF[disposition],
  };
}

/**
 * Records a code's outcome with its capture or release and its stock state, in one commit. With
 * `finish` (a job's run), the commit of the job's last outcome also finishes the job: a sync job
 * and its key, with what the answer needs; an async job and its webhook event. An outcome with
 * the activator's memory writes it in the same commit, and is recorded as code_used when the
 * memory has the code already. Null when the outcome was recorded already.
 */
export async function recordOutcome(
  deps: Pick<RedeemDeps, 'db' | 'clock' | 'metrics'>,
  job: Pick<JobRow, 'id' | 'source' | 'mode' | 'customerId' | 'channel'> & { walletCharges?: number },
  row: Pick<JobCodeRow, 'position'>,
  outcome: Outcome,
  fromState: 'pending' | 'sending',
  finish: FinishWith | null = null,
): Promise<Recorded | null> {
  const given = columnsOf(outcome.status, outcome.unknown === true, job);
  const memory = outcome.memory ?? null;
  // What a remembered code is recorded as instead (docs/reference/redeem.md#activators: used before).
  const used = columnsOf('code_used', false, job);
  const now = deps.clock.now();
  const sync = finish !== null && 'requestId' in finish ? finish : null;
  const eventId = finish !== null && 'eventId' in finish ? finish.eventId : null;
  // On Citus redeem_record_outcome is a distributed function: called alone, it runs whole on the
  // customer's worker (docs/running/citus.md#distributed-functions). It runs in a transaction
  // block instead, where Citus keeps it on the coordinator, when it writes a coordinator table
  // (the sandbox's memory, across customers; an async job's event's work_queue row) or may charge
  // the wallet: a ledger row's id comes from the coordinator's sequence there, in the order of the
  // account's lock (a worker's sequence numbers from a range of its own).
  const onCoordinator =
    (memory !== null || eventId !== null || job.walletCharges !== 0) && (await shardedByCustomer(deps.db));
  const record = (db: Queryable) =>
    db.query<{ r: OutcomeRow }>(
      `select redeem_record_outcome($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                                  $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28) as r`,
      [
        job.id,
        row.position,
        fromState,
        given.status,
        given.errorCode,
        given.disposition,
        given.billed,
        outcome.category ?? null,
        outcome.uc ?? null,
        now,
        new Date(now.getTime() + LEASE_MS),
        given.stockState,
        sync !== null,
        eventId,
        INSTANCE_ID,
        job.customerId,
        job.mode,
        utcDay(now),
        sync?.requestId ?? null,
        memory?.mode ?? null,
        memory?.codeHash ?? null,
        memory?.playerId ?? null,
        used.status,
        used.errorCode,
        used.disposition,
        used.billed,
        used.stockState,
        memory?.olderHashes?.length ? memory.olderHashes : null,
      ],
      'redeem_record_outcome',
    );
  // Rolled back whole to break a lock cycle: run again (the code's state guards it, never twice).
  const r = await retryOnDeadlock(() => (onCoordinator ? deps.db.transaction(record) : record(deps.db)));
  const recorded = r.rows[0]!.r;
  // Recorded already (by recovery racing a slow process): never billed, nor counted, twice.
  if (!recorded.recorded) return null;
  const done = recorded.remembered ? used : given;
  // Counted after the commit, so a rolled-back outcome counts nothing.
  deps.metrics?.codeOutcome({
    mode: job.mode,
    status: done.status,
    disposition: done.disposition,
    billed: done.billed,
    walletMicros: recorded.wallet_micros ?? 0,
  });
  return { status: done.status, billed: done.billed, finished: finishedOf(job, recorded) };
}

/** What the commit of a job's last outcome did, from redeem_record_outcome's answer. */
function finishedOf(job: Pick<JobRow, 'customerId'>, recorded: OutcomeRow): Finished | null {
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
