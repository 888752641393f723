// A redeem as a sequence of atomic phases (docs/architecture.md#house-rules: the database is the coordinator).
//   Phase 1 (this file), one commit: burst slot, idempotency key, stock reservation, billing
//   hold, the job and its codes, the first of them already marked out with the upstream.
//   Per code and last phase (run.ts): call the activator outside any transaction, record
//   the outcome with its capture or release in one commit; the commit of a sync job's last
//   outcome also finishes the job and makes its key replayable.
// A sync redeem of one code is thus two commits, each one statement calling one SQL function
// (src/db/functions/). A crash anywhere leaves rows that recovery (recovery.ts) finishes or releases.

import { shardedByCustomer } from '../../db/citus.ts';
import { isConnectionError, type Queryable } from '../../db/database.ts';
import { accountStateFrom } from '../accounts/accounts.ts';
import { billingRefusalError } from '../billing/holds.ts';
import { utcDay } from '../clock.ts';
import { type Caller, CODE_CONCURRENCY, type RedeemDeps } from '../context.ts';
import { codeLast4 } from '../crypto/code-crypto.ts';
import { ApiError } from '../errors.ts';
import { newJobId } from '../ids.ts';
import { INSTANCE_ID, LEASE_MS } from '../instance.ts';
import { createJob, drawStock, jobCodesParam, type NewCode } from '../jobs/create.ts';
import { type JobRow, loadJob, loadJobCodes } from '../jobs/jobs.ts';
import {
  BURST_LIMIT,
  BURST_WINDOW_MS,
  type BurstSlot,
  burstSlotFrom,
  rateLimitedError,
  takeBurstSlot,
} from '../limits/window-limit.ts';
import { retryOnDeadlock } from '../retry.ts';
import type { RedeemRequest } from './request.ts';
import type { CodeToRun, RunningJob } from './run.ts';
import { settleUnconfirmedStart } from './settle.ts';
import type { StartAnswer, StartChecks, StartResult, StartRow } from './start-result.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

/**
 * Phase 1: checks steps 10 to 12 of docs/reference/redeem.md#validation-order under the account lock, then takes the
 * idempotency key, reserves stock, holds billing and writes the job, its first codes already
 * marked out with the upstream (a sync job runs them at once). The caller's own codes take one
 * statement (redeem_start), which also re-checks a cached key and takes its burst slot; stock
 * is reserved in between redeem_begin and redeem_create_job, in one transaction. A refusal
 * changes nothing but the burst slot it took.
 */
export async function startRedeem(
  deps: RedeemDeps,
  caller: Caller,
  input: {
    idempotencyKey: string;
    fingerprint: string;
    request: RedeemRequest;
    requestId: string;
    checks?: StartChecks;
  },
): Promise<StartResult> {
  const now = deps.clock.now();
  const req = input.request;
  const day = utcDay(now);
  const leaseUntil = new Date(now.getTime() + LEASE_MS);
  const expiresAt = new Date(now.getTime() + IDEMPOTENCY_TTL_MS);
  // A sync job's first codes go out at once: marked in this commit. As many as its run starts
  // at once (runCodes' first round of workers takes exactly these), so a marked code is always
  // attempted, never left `sending` unsent.
  const sending = req.async ? 0 : (deps.config?.CODE_CONCURRENCY ?? CODE_CONCURRENCY);
  /** redeem_begin's typed arguments, in its order (src/db/functions/redeem.sql). */
  const beginArgs = (c: { keyId: string | null; recheckKey: boolean; burst: boolean }) => [
    c.keyId,
    c.recheckKey,
    c.burst,
    now.getTime(),
    BURST_WINDOW_MS,
    BURST_LIMIT,
    caller.customerId,
    caller.mode,
    now,
    input.idempotencyKey,
    input.fingerprint,
  ];
  const step: Phase1 = { now, day, leaseUntil, expiresAt, sending, beginArgs, jobId: newJobId() };
  return req.source === 'codes'
    ? startWithCodes(deps, caller, input, step, req)
    : startFromStock(deps, caller, input, step, req);
}

/** What phase 1 computes once for either path: the times, the job id, redeem_begin's arguments. */
interface Phase1 {
  now: Date;
  day: string;
  leaseUntil: Date;
  expiresAt: Date;
  /** How many of a sync job's first codes this commit marks `sending`. */
  sending: number;
  beginArgs: (c: { keyId: string | null; recheckKey: boolean; burst: boolean }) => unknown[];
  jobId: string;
}

type StartInput = Parameters<typeof startRedeem>[2];

/** The caller's own codes: one statement, redeem_start, which also re-checks the key and takes the burst slot. */
async function startWithCodes(
  deps: RedeemDeps,
  caller: Caller,
  input: StartInput,
  { now, day, leaseUntil, expiresAt, sending, beginArgs, jobId }: Phase1,
  req: Extract<RedeemRequest, { source: 'codes' }>,
): Promise<StartResult> {
  const checks = input.checks;
  const codes = req.codes.map((code, position) => ({
    position,
    code,
    stockId: null,
    category: null,
    uc: null,
  }));
  // On Citus redeem_start is a distributed function: called alone, it runs whole on the
  // customer's worker (docs/running/citus.md#distributed-functions). An async job's work_queue row
  // is the coordinator's: it starts in a transaction block, where Citus keeps the call there.
  const onCoordinator = req.async && (await shardedByCustomer(deps.db));
  const start = (db: Queryable) =>
    db.query<{ r: StartRow }>(
      `select redeem_start($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19,
                           $20, $21, $22, $23) as r`,
      [
        ...beginArgs({
          keyId: checks?.keyId ?? null,
          recheckKey: checks?.recheckKey ?? false,
          burst: checks?.burst ?? false,
        }),
        jobId,
        day,
        input.requestId,
        req.async,
        req.source,
        req.playerId,
        req.reference ?? null,
        INSTANCE_ID,
        leaseUntil,
        expiresAt,
        sending,
        jobCodesParam(deps, caller, codes),
      ],
      'redeem_start',
    );
  const r = await unconfirmed(deps, { customerId: caller.customerId, id: jobId }, () =>
    onCoordinator ? deps.db.transaction(start) : start(deps.db),
  );
  return startResult(caller, req, r.rows[0]!.r, now, codes);
}

/** Stock: redeem_begin, the reservation and the chooser, then redeem_create_job, in one transaction. */
async function startFromStock(
  deps: RedeemDeps,
  caller: Caller,
  input: StartInput,
  { now, day, leaseUntil, expiresAt, sending, beginArgs, jobId }: Phase1,
  req: Exclude<RedeemRequest, { source: 'codes' }>,
): Promise<StartResult> {
  const checks = input.checks;
  // Stock: the burst slot first, on its own (a refusal after stock was reserved rolls the whole
  // transaction back, and the slot must stay counted); a cached key is authenticated again first.
  if (checks?.recheckKey) return { kind: 'recheck' };
  let burst: BurstSlot | null = null;
  if (checks?.burst) {
    burst = await takeBurstSlot(deps.db, { id: checks.keyId, customerId: caller.customerId }, now);
    if (!burst.allowed)
      return { kind: 'refused', error: rateLimitedError(burst), answer: { burst, account: null } };
  }
  try {
    return await unconfirmed(deps, { customerId: caller.customerId, id: jobId }, () =>
      deps.db.transaction(async (tx) => {
        const begun = (
          await tx.query<{ r: StartRow }>(
            'select redeem_begin($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) as r',
            beginArgs({ keyId: null, recheckKey: false, burst: false }),
            'redeem_begin',
          )
        ).rows[0]!.r;
        if (begun.kind !== 'new') return startResult(caller, req, begun, now, [], burst);
        const previous = begun.previous ? await loadJob(tx, begun.previous, caller.customerId) : null;
        // Step 11: the codes still to attempt, and stock for them.
        const todo = await codesToAttempt(tx, deps, caller, req, jobId, previous);
        if (!todo)
          throw new ApiError(
            'no_stock',
            'not enough stock for this request; add codes or send codes yourself',
          );
        const created = await createJob<StartRow>(tx, deps, {
          jobId,
          caller,
          now,
          day,
          idempotencyKey: input.idempotencyKey,
          fingerprint: input.fingerprint,
          requestId: input.requestId,
          async: req.async,
          source: req.source,
          playerId: req.playerId,
          reference: req.reference ?? null,
          previousJobId: previous?.id ?? null,
          owner: INSTANCE_ID,
          leaseUntil,
          expiresAt,
          sending,
          codes: todo,
          channel: 'api',
        });
        const result = startResult(caller, req, created, now, todo, burst);
        // A billing refusal: the reservation is rolled back with the rest.
        if (result.kind === 'refused') throw result.error;
        return result;
      }),
    );
  } catch (err) {
    if (err instanceof ApiError) return { kind: 'refused', error: err, answer: { burst, account: null } };
    throw err;
  }
}

/** The verdict row of phase 1's statement as what the caller acts on (start-result.ts). */
function startResult(
  caller: Caller,
  req: RedeemRequest,
  row: StartRow,
  now: Date,
  codes: NewCode[],
  burst: BurstSlot | null = null,
): StartResult {
  if (row.kind === 'recheck') return { kind: 'recheck' };
  const slot =
    burst ??
    (row.hits ? burstSlotFrom(row.kind !== 'rate_limited', row.hits.map(Number), now.getTime()) : null);
  const answer: StartAnswer = {
    burst: slot,
    account: 'account' in row && row.account ? accountStateFrom(caller.customerId, row.account) : null,
  };
  const refused = (error: ApiError): StartResult => ({ kind: 'refused', error, answer });
  switch (row.kind) {
    case 'rate_limited':
      return refused(rateLimitedError(slot!));
    case 'conflict':
      return refused(
        new ApiError('idempotency_conflict', 'this Idempotency-Key was used with a different request'),
      );
    case 'in_progress':
      return refused(
        new ApiError(
          'idempotency_in_progress',
          'an identical request is still running',
          {},
          { 'Retry-After': '1' },
        ),
      );
    case 'interrupted':
      return refused(
        new ApiError('job_interrupted', 'the job was stopped by a server restart; retry with a new key', {
          job_id: row.job_id,
        }),
      );
    case 'replay':
      return { kind: 'replay', jobId: row.job_id, status: row.status, requestId: row.request_id, answer };
    case 'new':
      throw new Error('redeem_begin verdict handled by the caller');
    case 'started': {
      // The codes of the new job still to attempt, as phase 1 wrote them (reused ones are done).
      const sending = new Set(row.sending);
      const byPosition = new Map(codes.map((c) => [c.position, c]));
      const todo: CodeToRun[] = row.todo.map((position) => {
        const c = byPosition.get(position)!;
        return {
          position,
          code: () => c.code,
          last4: codeLast4(c.code),
          stockId: c.stockId,
          category: c.category,
          uc: c.uc,
          state: sending.has(position) ? 'sending' : 'pending',
        };
      });
      const job: RunningJob = {
        id: row.job_id,
        ...caller,
        playerId: req.playerId,
        source: req.source,
        isAsync: req.async,
        leaseExpiresAt: req.async ? null : new Date(now.getTime() + LEASE_MS),
        channel: 'api',
        walletCharges: row.wallet_charges,
      };
      return { kind: 'started', jobId: row.job_id, job, todo, answer };
    }
    default:
      return refused(billingRefusalError(row, now));
  }
}

/**
 * Runs phase 1's commit; when the connection dies under it, whether it committed is unknown, and
 * a job it wrote would hold codes marked `sending` that were never sent: settled in the
 * background once the database answers (settle.ts settleUnconfirmedStart). The request gets the
 * connection error (503 unavailable).
 */
async function unconfirmed<T>(
  deps: RedeemDeps,
  job: { customerId: number; id: string },
  commit: () => Promise<T>,
): Promise<T> {
  // PostgreSQL may break a lock cycle by rolling this commit back whole (requests marking the same
  // codes in other orders, or a phase 1 waiting on an outcome that waits for the account):
  // nothing of it was written, so it runs again.
  const once = async () => {
    try {
      return await commit();
    } catch (err) {
      if (isConnectionError(err)) void settleUnconfirmedStart(deps, job);
      throw err;
    }
  };
  return retryOnDeadlock(once, (attempt) =>
    deps.logger.warn(
      { jobId: job.id, attempt },
      'phase 1 rolled back to break a lock cycle; running it again',
    ),
  );
}

/**
 * The stock codes a new job must attempt. A resumed key attempts only what its earlier job left
 * pending, with fresh stock of the same categories for those positions. Returns null when stock
 * runs short.
 */
async function codesToAttempt(
  tx: Queryable,
  deps: RedeemDeps,
  caller: Caller,
  req: RedeemRequest & { source: 'stock' },
  jobId: string,
  previous: JobRow | null,
): Promise<NewCode[] | null> {
  let draw: { packs: { category: string; count: number }[] } | { uc: number } = req;
  let positions: number[] | undefined;
  if (previous) {
    const pending = (await loadJobCodes(tx, previous.id, previous.customerId)).filter(
      (r) => r.state !== 'done',
    );
    if (pending.length === 0) return [];
    const packs: { category: string; count: number }[] = [];
    for (const r of pending) {
      const last = packs.at(-1);
      if (last && last.category === r.category) last.count += 1;
      else packs.push({ category: r.category!, count: 1 });
    }
    draw = { packs };
    positions = pending.map((r) => r.position);
  }
  return drawStock(tx, deps, caller, draw, jobId, positions);
}
