// Phase 1's words (start.ts): the checks it is handed besides the request, the verdict row of its
// statement (redeem_start, or redeem_begin and redeem_create_job), and that verdict as what the
// caller acts on (start.ts startResult): a refusal with its error, a replay, a recheck of the key,
// or a started job with the codes to run.
import type { AccountRow, AccountState } from '../accounts/accounts.ts';
import type { BillingRefusal } from '../billing/holds.ts';
import type { ApiError } from '../errors.ts';
import type { BurstSlot } from '../limits/window-limit.ts';
import type { CodeToRun, RunningJob } from './run.ts';

/** What phase 1 checks besides the request (absent: nothing; tests start jobs directly). */
export interface StartChecks {
  /** The API key: re-checked (revocation, customer state) with `recheckKey`, and its burst slot. */
  keyId: string;
  /** The key came from the in-process cache: check it again inside the statement that runs. */
  recheckKey: boolean;
  /** Take the key's burst slot (docs/reference/limits.md#redeem-burst-limit) in the same commit. */
  burst: boolean;
}

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

export type { NewCode } from '../jobs/create.ts';

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
      /** How many of its outcomes may charge the wallet (a ledger row each); absent for a bot redeem. */
      wallet_charges?: number;
    }
  | (BillingRefusal & { kind?: undefined; hits?: number[] | null; account?: AccountRow });
