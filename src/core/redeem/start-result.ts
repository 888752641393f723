// The verdict of phase 1's statement (redeem_start, or redeem_begin and redeem_create_job), as
// what the caller acts on: a refusal with its error, a replay, a recheck of the key, or a started
// job with the codes to run.
import { type AccountRow, type AccountState, accountStateFrom } from '../accounts/accounts.ts';
import { type BillingRefusal, billingRefusalError } from '../billing/billing.ts';
import type { Caller } from '../context.ts';
import { codeLast4 } from '../crypto/code-crypto.ts';
import { ApiError } from '../errors.ts';
import { LEASE_MS } from '../instance.ts';
import { type BurstSlot, burstSlotFrom, rateLimitedError } from '../limits/window-limit.ts';
import type { RedeemRequest } from './request.ts';
import type { CodeToRun, RunningJob } from './run.ts';

export type StartResult =
  | { kind: 'replay'; jobId: string; status: number; requestId: string; answer: StartAnswer }
  | { kind: 'started'; jobId: string; job: RunningJob; todo: CodeToRun[]; answer: StartAnswer }
  /** Refused at step 10 to 12 (or by the burst limit): nothing was written but the burst slot. */
  | { kind: 'refused'; error: ApiError; answer: StartAnswer }
  /** A cached key was revoked or its customer disabled: authenticate it again, then retry. */
  | { kind: 'recheck' };

/** What every answer of phase 1 reports besides its verdict: the burst window and the account. */
export interface StartAnswer {
  burst: BurstSlot | null;
  /** The account after phase 1 (the quota headers), when phase 1 read it. */
  account: AccountState | null;
}

export interface NewCode {
  /** Where the code stands in the result: the request's order, kept across a resume. */
  position: number;
  code: string;
  stockId: number | null;
  category: string | null;
  uc: number | null;
}

/** The verdict of redeem_begin / redeem_create_job / redeem_start (src/db/functions/redeem.sql). */
export type StartRow =
  | { kind: 'recheck' }
  | { kind: 'rate_limited'; hits: number[] }
  | { kind: 'conflict' | 'in_progress'; hits: number[] | null; account?: AccountRow }
  | { kind: 'interrupted'; job_id: string; hits: number[] | null; account?: AccountRow }
  | {
      kind: 'replay';
      job_id: string;
      status: number;
      request_id: string;
      hits: number[] | null;
      account?: AccountRow;
    }
  | { kind: 'new'; previous: string | null; hits: number[] | null }
  | {
      kind: 'started';
      job_id: string;
      todo: number[];
      sending: number[];
      hits?: number[] | null;
      account?: AccountRow;
    }
  | (BillingRefusal & { kind?: undefined; hits?: number[] | null; account?: AccountRow });

export function startResult(
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
      };
      return { kind: 'started', jobId: row.job_id, job, todo, answer };
    }
    default:
      return refused(billingRefusalError(row, now));
  }
}
