// The one way a job is made, whoever asks (graphile-worker's add_job idea): the API's redeem
// (phase 1, redeem/start.ts) and the chat's manual redeem (bot/redeems.ts) both call createJob,
// in their own transaction, with the codes the job will attempt; drawStock reserves those codes
// from stock when the request names packs or UC. The job and its job_codes rows are written by
// one SQL function, redeem_create_job (db/functions/redeem.sql), which also takes the request's
// hold when it is billed; a bot job holds and bills nothing. The API's sync redeem of its own
// codes begins and creates in one statement (redeem_start), with the same codes (jobCodesParam).
import type { Queryable } from '../../db/database.ts';
import type { Caller, RedeemDeps } from '../context.ts';
import { codeHash, codeLast4, encryptCode } from '../crypto/code-crypto.ts';
import { reserveForUc, reserveStock } from '../stock/stock.ts';

/** A code a new job will attempt. */
export interface NewCode {
  /** Where the code stands in the result: the request's order, kept across a resume. */
  position: number;
  code: string;
  stockId: number | null;
  category: string | null;
  uc: number | null;
}

/** What a new job is: who asks, through which door, and what it attempts. */
export interface NewJob {
  jobId: string;
  caller: Caller;
  now: Date;
  /** The UTC day its quota counts in. */
  day: string;
  /** The request's Idempotency-Key and body fingerprint (a bot job: its confirmation, ''). */
  idempotencyKey: string;
  fingerprint: string;
  requestId: string;
  async: boolean;
  source: 'codes' | 'stock';
  playerId: string;
  reference: string | null;
  /** The earlier job of the same key this one resumes, if any. */
  previousJobId: string | null;
  /** The process running it now, until when (null owner: queued for the worker). */
  owner: string;
  leaseUntil: Date;
  /** When the idempotency key's record expires. */
  expiresAt: Date;
  /** How many codes the caller will send at once. */
  sending: number;
  codes: readonly NewCode[];
  channel: 'api' | 'bot';
}

/** A code as redeem_create_job inserts it: hashed, encrypted for job_codes, its last 4. */
function codeParam(deps: Pick<RedeemDeps, 'codeKey'>, caller: Caller, c: NewCode) {
  const hash = codeHash(deps.codeKey, c.code);
  return {
    position: c.position,
    hash,
    encrypted: encryptCode(deps.codeKey, c.code, { table: 'job_codes', ...caller, codeHash: hash }),
    last4: codeLast4(c.code),
    stock_id: c.stockId,
    category: c.category,
    uc: c.uc,
  };
}

/**
 * The job's codes as redeem_create_job (and redeem_start, which begins a request and creates its
 * job in one statement) take them: one JSON array.
 */
export function jobCodesParam(
  deps: Pick<RedeemDeps, 'codeKey'>,
  caller: Caller,
  codes: readonly NewCode[],
): string {
  return JSON.stringify(codes.map((c) => codeParam(deps, caller, c)));
}

/**
 * Creates the job and its codes in `tx` (redeem_create_job); returns the function's verdict row
 * (the job made, or why not: a billing refusal), which the caller reads as its own.
 */
export async function createJob<Verdict>(
  tx: Queryable,
  deps: Pick<RedeemDeps, 'codeKey'>,
  job: NewJob,
): Promise<Verdict> {
  const r = await tx.query<{ r: Verdict }>(
    `select redeem_create_job($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17,
                              $18, $19) as r`,
    [
      job.jobId,
      job.caller.customerId,
      job.caller.mode,
      job.now,
      job.day,
      job.idempotencyKey,
      job.fingerprint,
      job.requestId,
      job.async,
      job.source,
      job.playerId,
      job.reference,
      job.previousJobId,
      job.owner,
      job.leaseUntil,
      job.expiresAt,
      job.sending,
      jobCodesParam(deps, job.caller, job.codes),
      job.channel,
    ],
    'redeem_create_job',
  );
  return r.rows[0]!.r;
}

/**
 * Reserves fresh stock for a new job's packs or uc (the chooser's draw), placed at `positions`
 * in order (a new job's: 0, 1, …); null when stock runs short.
 */
export async function drawStock(
  tx: Queryable,
  deps: Pick<RedeemDeps, 'codeKey' | 'clock'>,
  caller: Caller,
  req: { packs: { category: string; count: number }[] } | { uc: number },
  jobId: string,
  positions?: readonly number[],
): Promise<NewCode[] | null> {
  const drawn =
    'packs' in req
      ? await reserveStock(tx, deps.codeKey, { ...caller, picks: req.packs, reservedBy: jobId }, deps.clock)
      : await reserveForUc(tx, deps.codeKey, { ...caller, uc: req.uc, reservedBy: jobId }, deps.clock);
  return (
    drawn?.map((c, i) => ({
      position: positions ? positions[i]! : i,
      code: c.code,
      stockId: c.stockId,
      category: c.category,
      uc: c.uc,
    })) ?? null
  );
}
