// A redeem as a sequence of atomic phases (DESIGN: the database is the coordinator).
//   Phase 1 (this file), one transaction: idempotency key, stock reservation, billing hold, the
//   job and its codes.
//   Per code and last phase (redeem-run.ts): mark a code out with the upstream (committed), call
//   the activator outside any transaction, record the outcome with its capture or release in one
//   transaction; then finish the job and make its key replayable.
// A crash anywhere leaves rows that recovery (recovery.ts) finishes or releases.

import type { Logger } from 'pino';
import type { Activator } from '../activators/activator.ts';
import type { Config } from '../config.ts';
import type { Database, Queryable } from '../db/database.ts';
import { ApiError } from '../http/errors.ts';
import type { Metrics } from '../metrics/registry.ts';
import type { Mode } from './accounts.ts';
import { applyHold, decideHold, type Hold, loadLockedState } from './billing.ts';
import { type Clock, utcDay } from './clock.ts';
import { codeHash, codeLast4, decryptCode, encryptCode } from './code-crypto.ts';
import { newJobId } from './ids.ts';
import { INSTANCE_ID, LEASE_MS } from './instance.ts';
import { type JobRow, loadJob, loadJobCodes } from './jobs.ts';
import type { RedeemRequest } from './redeem-request.ts';
import { type ReservedCode, reserveForUc, reserveStock } from './stock.ts';

export const IDEMPOTENCY_TTL_MS = 24 * 3600 * 1000;

export interface RedeemDeps {
  db: Database;
  clock: Clock;
  codeKey: Buffer;
  logger: Logger;
  activatorFor(mode: Mode): Activator;
  /** Counts outcomes, billing and queue waits once recorded (absent: nothing is counted). */
  metrics?: Metrics;
  /** Worker sizes and the database deadline (absent: their defaults; the app passes its config). */
  config?: Pick<Config, 'CODE_CONCURRENCY' | 'DATABASE_TIMEOUT_MS'>;
}

export interface Caller {
  customerId: number;
  mode: Mode;
}

interface KeyRow {
  fingerprint: string;
  state: 'in_progress' | 'done' | 'released';
  jobId: string | null;
  responseStatus: number | null;
  responseRequestId: string | null;
}

export type StartResult =
  | { kind: 'replay'; jobId: string; status: number; requestId: string }
  | { kind: 'started'; jobId: string };

interface NewCode {
  /** Where the code stands in the result: the request's order, kept across a resume. */
  position: number;
  code: string;
  stockId: number | null;
  category: string | null;
  uc: number | null;
}

/**
 * Phase 1: checks steps 10 to 12 of contract section 3 under the account lock, then takes the
 * idempotency key, reserves stock, holds billing and writes the job. Throws the refusal as an
 * ApiError; a refusal changes nothing.
 */
export async function startRedeem(
  deps: RedeemDeps,
  caller: Caller,
  input: { idempotencyKey: string; fingerprint: string; request: RedeemRequest; requestId: string },
): Promise<StartResult> {
  const { clock, codeKey } = deps;
  return deps.db.transaction(async (tx) => {
    const now = clock.now();
    const state = await loadLockedState(tx, caller.customerId, caller.mode, now);

    // Step 10: idempotency.
    const key = await readKey(tx, caller, input.idempotencyKey, now);
    let previous: JobRow | null = null;
    if (key) {
      if (key.fingerprint !== input.fingerprint) {
        throw new ApiError('idempotency_conflict', 'this Idempotency-Key was used with a different request');
      }
      if (key.state === 'in_progress') {
        throw new ApiError(
          'idempotency_in_progress',
          'an identical request is still running',
          {},
          { 'Retry-After': '1' },
        );
      }
      if (key.state === 'done') {
        const job = await loadJob(tx, key.jobId!);
        if (job?.isAsync && job.status === 'interrupted') {
          throw new ApiError(
            'job_interrupted',
            'the job was stopped by a server restart; retry with a new key',
            {
              job_id: job.id,
            },
          );
        }
        return {
          kind: 'replay',
          jobId: key.jobId!,
          status: key.responseStatus!,
          requestId: key.responseRequestId!,
        };
      }
      // Released after a 5xx: resume, reusing every outcome already recorded.
      previous = key.jobId ? await loadJob(tx, key.jobId) : null;
    }

    const jobId = newJobId();
    const reused = previous ? (await loadJobCodes(tx, previous.id)).filter((r) => r.state === 'done') : [];
    // Step 11: the codes still to attempt (and stock for them).
    const todo = await codesToAttempt(tx, deps, caller, input.request, jobId, previous);
    if (!todo)
      throw new ApiError('no_stock', 'not enough stock for this request; add codes or send codes yourself');

    // Step 12: billing for the codes to attempt.
    const hold: Hold =
      todo.length > 0
        ? decideHold(state, todo.length, now)
        : { day: utcDay(now), rateMicros: 0, included: 0, wallet: 0 };
    await applyHold(tx, caller.customerId, caller.mode, hold);

    const req = input.request;
    const total = reused.length + todo.length;
    await tx.query(
      `insert into jobs (id, customer_id, mode, idempotency_key, is_async, status, source, player_id, reference, total,
                         hold_day, rate_micros, hold_included, hold_wallet, lease_owner, lease_expires_at, created_at, started_at, request_id)
       values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19)`,
      [
        jobId,
        caller.customerId,
        caller.mode,
        input.idempotencyKey,
        req.async,
        req.async ? 'queued' : 'running',
        req.source,
        req.playerId,
        req.reference,
        total,
        hold.day,
        hold.rateMicros,
        hold.included,
        hold.wallet,
        req.async ? null : INSTANCE_ID,
        req.async ? null : new Date(now.getTime() + LEASE_MS),
        now,
        req.async ? null : now,
        input.requestId,
      ],
      'job_insert',
    );
    for (const r of reused) {
      await tx.query(
        `insert into job_codes (job_id, position, code_hash, code_encrypted, last4, stock_id, category, uc, state,
                                status, error_code, disposition, billed, reused, finished_at)
         values ($1, $2, $3, $4, $5, $6, $7, $8, 'done', $9, $10, $11, $12, true, $13)`,
        [
          jobId,
          r.position,
          r.codeHash,
          r.codeEncrypted,
          r.last4,
          r.stockId,
          r.category,
          r.uc,
          r.status,
          r.errorCode,
          r.disposition,
          r.billed,
          now,
        ],
        'job_code_insert_reused',
      );
    }
    for (const c of todo) {
      const hash = codeHash(codeKey, c.code);
      await tx.query(
        `insert into job_codes (job_id, position, code_hash, code_encrypted, last4, stock_id, category, uc, state)
         values ($1, $2, $3, $4, $5, $6, $7, $8, 'pending')`,
        [
          jobId,
          c.position,
          hash,
          encryptCode(codeKey, c.code, { table: 'job_codes', ...caller, codeHash: hash }),
          codeLast4(c.code),
          c.stockId,
          c.category,
          c.uc,
        ],
        'job_code_insert',
      );
    }
    // An async request is answered with its 202 at once: from then on its key replays that 202.
    await takeKey(
      tx,
      caller,
      input,
      jobId,
      now,
      req.async ? { status: 202, requestId: input.requestId } : null,
    );
    return { kind: 'started', jobId };
  });
}

async function readKey(tx: Queryable, caller: Caller, key: string, now: Date): Promise<KeyRow | null> {
  const r = await tx.query<KeyRow>(
    `select fingerprint, state, job_id as "jobId", response_status as "responseStatus",
            response_request_id as "responseRequestId"
       from idempotency_keys where customer_id = $1 and mode = $2 and key = $3 and expires_at > $4`,
    [caller.customerId, caller.mode, key, now],
    'idempotency_read',
  );
  return r.rows[0] ?? null;
}

async function takeKey(
  tx: Queryable,
  caller: Caller,
  input: { idempotencyKey: string; fingerprint: string },
  jobId: string,
  now: Date,
  answered: { status: number; requestId: string } | null,
) {
  // An expired row (older than 24 hours) is replaced as if it were absent.
  await tx.query(
    `insert into idempotency_keys (customer_id, mode, key, fingerprint, state, job_id, created_at, expires_at,
                                   response_status, response_request_id)
     values ($1, $2, $3, $4, $8, $5, $6, $7, $9, $10)
     on conflict (customer_id, mode, key) do update
       set fingerprint = excluded.fingerprint, state = excluded.state, job_id = excluded.job_id,
           response_status = excluded.response_status, response_request_id = excluded.response_request_id,
           created_at = case when idempotency_keys.expires_at <= excluded.created_at then excluded.created_at else idempotency_keys.created_at end,
           expires_at = case when idempotency_keys.expires_at <= excluded.created_at then excluded.expires_at else idempotency_keys.expires_at end`,
    [
      caller.customerId,
      caller.mode,
      input.idempotencyKey,
      input.fingerprint,
      jobId,
      now,
      new Date(now.getTime() + IDEMPOTENCY_TTL_MS),
      answered ? 'done' : 'in_progress',
      answered?.status ?? null,
      answered?.requestId ?? null,
    ],
    'idempotency_take',
  );
}

/**
 * The codes a new job must attempt. A resumed key attempts only what its earlier job left
 * pending: caller codes by position, stock by category (fresh codes are reserved). Returns null
 * when stock runs short.
 */
async function codesToAttempt(
  tx: Queryable,
  deps: RedeemDeps,
  caller: Caller,
  req: RedeemRequest,
  jobId: string,
  previous: JobRow | null,
): Promise<NewCode[] | null> {
  const reserve = (picks: { category: string; count: number }[]) =>
    reserveStock(tx, deps.codeKey, { ...caller, picks, reservedBy: jobId }, deps.clock);
  /** Stock codes placed at the given positions, in order. */
  const placed = (codes: ReservedCode[] | null, positions: number[]) =>
    codes?.map((c, i) => ({
      position: positions[i]!,
      code: c.code,
      stockId: c.stockId,
      category: c.category,
      uc: c.uc,
    })) ?? null;

  if (previous) {
    const pending = (await loadJobCodes(tx, previous.id)).filter((r) => r.state !== 'done');
    const positions = pending.map((r) => r.position);
    if (req.source === 'codes') {
      return pending.map((r) => ({
        position: r.position,
        code: decryptCode(deps.codeKey, r.codeEncrypted!, {
          table: 'job_codes',
          ...caller,
          codeHash: r.codeHash,
        }),
        stockId: null,
        category: null,
        uc: null,
      }));
    }
    // Fresh stock of the same categories, for the positions never attempted.
    const picks: { category: string; count: number }[] = [];
    for (const r of pending) {
      const last = picks.at(-1);
      if (last && last.category === r.category) last.count += 1;
      else picks.push({ category: r.category!, count: 1 });
    }
    return picks.length ? placed(await reserve(picks), positions) : [];
  }
  if (req.source === 'codes') {
    return req.codes.map((code, position) => ({ position, code, stockId: null, category: null, uc: null }));
  }
  const drawn =
    'packs' in req
      ? await reserve(req.packs)
      : await reserveForUc(tx, deps.codeKey, { ...caller, uc: req.uc, reservedBy: jobId }, deps.clock);
  return placed(drawn, drawn ? drawn.map((_, i) => i) : []);
}
