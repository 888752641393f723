// SQL for jobs and their codes, and the redeem result built from them. The result is never
// stored as text: it holds codes, which are bearer value, so it is rebuilt from the (encrypted)
// rows whenever it is answered or replayed.

import type { Queryable } from '../../db/database.ts';
import type { AccountRow } from '../accounts/accounts.ts';
import { decryptCode, maskCode, storedCodeLength } from '../crypto/code-crypto.ts';
import type { ActivationStatus, Disposition, JobStatus, Mode } from '../vocabulary.ts';

export interface JobRow {
  id: string;
  customerId: number;
  mode: Mode;
  idempotencyKey: string;
  isAsync: boolean;
  status: JobStatus;
  source: 'codes' | 'stock';
  playerId: string;
  reference: string | null;
  total: number;
  leaseOwner: string | null;
  leaseExpiresAt: Date | null;
  createdAt: Date;
  startedAt: Date | null;
  finishedAt: Date | null;
  error: Record<string, unknown> | null;
  /** The request that created the job (async jobs answer with it). */
  requestId: string | null;
  /** `bot`: a manual redeem from the chat (contract 14.4): nothing held or billed, no webhook. */
  channel: JobChannel;
}

export type JobChannel = 'api' | 'bot';

export interface JobCodeRow {
  position: number;
  codeHash: string;
  /** Null once retention dropped it (core/retention.ts); then codeLength says how long the code was. */
  codeEncrypted: string | null;
  codeLength: number | null;
  last4: string;
  stockId: number | null;
  category: string | null;
  uc: number | null;
  state: 'pending' | 'sending' | 'done';
  status: ActivationStatus | null;
  errorCode: string | null;
  disposition: Disposition | null;
  billed: boolean | null;
  reused: boolean;
  startedAt: Date | null;
  finishedAt: Date | null;
  /** For a quarantined code: what a status check or the operator found ('used' or 'unused'). */
  settlement: 'used' | 'unused' | null;
}

/** The columns of JobRow, from jobs under the alias `a`. */
const jobColumns = (a: string) => `${a}.id, ${a}.customer_id as "customerId", ${a}.mode,
  ${a}.idempotency_key as "idempotencyKey", ${a}.is_async as "isAsync", ${a}.status, ${a}.source,
  ${a}.player_id as "playerId", ${a}.reference, ${a}.total, ${a}.lease_owner as "leaseOwner",
  ${a}.lease_expires_at as "leaseExpiresAt", ${a}.created_at as "createdAt", ${a}.started_at as "startedAt",
  ${a}.finished_at as "finishedAt", ${a}.error, ${a}.request_id as "requestId", ${a}.channel`;
const JOB_COLUMNS = jobColumns('jobs');

const CODE_COLUMNS = `position, code_hash as "codeHash", code_encrypted as "codeEncrypted",
  code_length as "codeLength", last4,
  stock_id as "stockId", category, uc, state, status, error_code as "errorCode", disposition, billed, reused,
  started_at as "startedAt", finished_at as "finishedAt", settlement`;

export async function loadJob(q: Queryable, jobId: string): Promise<JobRow | null> {
  const r = await q.query<JobRow>(`select ${JOB_COLUMNS} from jobs where id = $1`, [jobId], 'job_by_id');
  return r.rows[0] ?? null;
}

/**
 * A job with its codes in one statement (the codes as job_codes_json gives them, functions/jobs.sql:
 * every field a run or a result needs; startedAt, finishedAt and settlement are not among them).
 */
export async function loadJobWithCodes(q: Queryable, jobId: string): Promise<JobWithCodes | null> {
  const r = await q.query<JobWithCodesRow>(
    `select ${JOB_WITH_CODES} from jobs where id = $1`,
    [jobId],
    'job_with_codes',
  );
  return jobWithCodes(r.rows[0]);
}

export interface JobWithCodes {
  job: JobRow;
  codes: JobCodeRow[];
}

/** A job row and its codes as one row of `jobs` gives them (a select, or an update's `returning`). */
export const JOB_WITH_CODES = `${JOB_COLUMNS}, job_codes_json(jobs.id) as codes`;
export type JobWithCodesRow = JobRow & { codes: JobCodeRow[] };

export function jobWithCodes(row: JobWithCodesRow | undefined): JobWithCodes | null {
  if (!row) return null;
  const { codes, ...job } = row;
  return { job, codes };
}

/**
 * GET /v1/jobs/{id} in one statement: the key's revocation and its customer's account (which
 * also gives the quota headers), the key's read slot (contract 13.8) taken, and the async job of
 * that id if it is the key's customer's and mode's (jobId null: no job can have the id asked for),
 * with its codes. Null for no such key.
 */
export async function loadKeyJob(
  q: Queryable,
  key: { id: string },
  jobId: string | null,
  day: string,
): Promise<{
  revokedAt: Date | null;
  expiresAt: Date | null;
  account: AccountRow;
  job: JobRow | null;
  codes: JobCodeRow[];
} | null> {
  const r = await q.query<
    JobRow & {
      revokedAt: Date | null;
      keyExpiresAt: Date | null;
      account: AccountRow;
      codes: JobCodeRow[] | null;
      found: boolean;
    }
  >(
    `select k.revoked_at as "revokedAt", k.expires_at as "keyExpiresAt", account_state(k.customer_id, k.mode, $2::date) as account,
            j.id is not null as found, ${jobColumns('j')}, case when j.id is null then null else job_codes_json(j.id) end as codes
       from api_keys k
       left join jobs j on j.id = $3 and j.customer_id = k.customer_id and j.mode = k.mode and j.is_async
      where k.id = $1`,
    [key.id, day, jobId],
    'key_job',
  );
  const row = r.rows[0];
  if (!row) return null;
  const { revokedAt, keyExpiresAt, account, codes, found, ...job } = row;
  // The key's expiry is read again: a reroll (contract 13.4) moves a cached key's expiry.
  return {
    revokedAt,
    expiresAt: keyExpiresAt,
    account,
    job: found ? job : null,
    codes: codes ?? [],
  };
}

export async function loadJobCodes(q: Queryable, jobId: string): Promise<JobCodeRow[]> {
  const r = await q.query<JobCodeRow>(
    `select ${CODE_COLUMNS} from job_codes where job_id = $1 order by position`,
    [jobId],
    'job_codes_by_job',
  );
  return r.rows;
}

export const ERROR_CODE_OF: Record<ActivationStatus, string> = {
  activated: '',
  code_used: 'CODE_USED',
  invalid_code: 'INVALID_CODE',
  bad_player: 'CHARACTER_NOT_FOUND',
  failed: 'ACTIVATION_FAILED',
};

export const BILLED_STATUSES: ReadonlySet<ActivationStatus> = new Set([
  'activated',
  'code_used',
  'invalid_code',
]);

/** The disposition table of contract section 3. */
export function dispositionOf(
  status: ActivationStatus,
  unknown: boolean,
  source: 'codes' | 'stock',
): Disposition {
  if (status === 'activated') return 'consumed';
  if (status === 'code_used' || status === 'invalid_code') return 'deleted';
  if (status === 'failed' && unknown) return 'quarantined';
  return source === 'stock' ? 'returned' : 'kept';
}

/** The stock state a disposition leaves a stock code in. */
export const STOCK_STATE_OF: Record<Disposition, 'consumed' | 'deleted' | 'available' | 'quarantined'> = {
  consumed: 'consumed',
  deleted: 'deleted',
  kept: 'available',
  returned: 'available',
  quarantined: 'quarantined',
};

export interface CodeResult {
  code: string;
  category: string | null;
  uc: number | null;
  status: string;
  error_code: string;
  disposition: string;
  billed: boolean;
}

/**
 * How an answer shows a code: the one home of the rule for every answer built from a job (sync
 * results, replays, GET /v1/jobs/{id}, webhook payloads). A stock code is masked (contract 12.1):
 * the merchant holds it already, and a request that returns it to stock must reveal nothing
 * usable, so it is never decrypted here. A caller code is echoed as sent, until retention dropped
 * its ciphertext (12.2); from then on it is masked too.
 */
function shownCode(
  job: Pick<JobRow, 'customerId' | 'mode' | 'source'>,
  r: JobCodeRow,
  codeKey: Buffer,
  sent?: readonly string[],
): string {
  if (r.codeEncrypted === null) return maskCode(r.last4, r.codeLength ?? r.last4.length);
  if (job.source === 'stock' || r.stockId !== null)
    return maskCode(r.last4, storedCodeLength(r.codeEncrypted));
  // The request being answered sent this code: echoed as sent, without decrypting it again.
  const known = sent?.[r.position];
  if (known !== undefined) return known;
  return decryptCode(codeKey, r.codeEncrypted, {
    table: 'job_codes',
    customerId: job.customerId,
    mode: job.mode,
    codeHash: r.codeHash,
  });
}

export function codeResults(
  job: Pick<JobRow, 'customerId' | 'mode' | 'source'>,
  rows: JobCodeRow[],
  codeKey: Buffer,
  sent?: readonly string[],
): CodeResult[] {
  return rows
    .filter((r) => r.state === 'done')
    .map((r) => ({
      code: shownCode(job, r, codeKey, sent),
      category: r.category,
      uc: r.uc,
      status: r.status!,
      error_code: r.errorCode ?? '',
      disposition: r.disposition!,
      billed: r.billed === true,
    }));
}

/**
 * A job's result body (contract section 3; the caller adds request_id, and job_id for jobs).
 * `sent`: the caller's codes of the request being answered, by position (a fresh sync answer),
 * shown as sent instead of decrypted.
 */
export function buildResult(
  job: Pick<JobRow, 'customerId' | 'mode' | 'source' | 'playerId' | 'reference'>,
  rows: JobCodeRow[],
  codeKey: Buffer,
  sent?: readonly string[],
) {
  const codes = codeResults(job, rows, codeKey, sent);
  const summary = { activated: 0, code_used: 0, invalid_code: 0, bad_player: 0, failed: 0 };
  let ucDelivered = 0;
  let billed = 0;
  for (const c of codes) {
    if (c.status in summary) summary[c.status as keyof typeof summary] += 1;
    if (c.status === 'activated') ucDelivered += c.uc ?? 0;
    if (c.billed) billed += 1;
  }
  return {
    ok: summary.activated > 0,
    player_id: job.playerId,
    mode: job.mode,
    source: job.source,
    reference: job.reference,
    codes,
    summary,
    uc_delivered: ucDelivered,
    billed_requests: billed,
    refunded_requests: codes.length - billed,
  };
}
