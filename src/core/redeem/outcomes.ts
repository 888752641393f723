// The redeem's outcome vocabulary and its result body: the tables from an upstream's answer to
// an error code, a billing and a disposition (docs/reference/redeem.md#dispositions), and the body every answer
// built from a job shows (sync results, replays, GET /v1/jobs/{id}, webhook payloads). The
// result is never stored as text: it holds codes, which are bearer value, so it is rebuilt from
// the (encrypted) rows whenever it is answered or replayed.
import { decryptCode, maskCode, storedCodeLength } from '../crypto/code-crypto.ts';
import type { JobChannel, JobCodeRow, JobRow } from '../jobs/jobs.ts';
import { type ActivationStatus, CODE_STATUSES, type Disposition } from '../vocabulary.ts';

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

/**
 * Whether an outcome is billed: the one rule, for what is recorded (redeem_record_outcome's
 * `billed`) and for what a run counts. A bot redeem is outside the API quota (docs/reference/bot.md#commands): no
 * outcome of it is billed.
 */
export function isBilled(status: ActivationStatus, channel: JobChannel): boolean {
  return channel === 'api' && BILLED_STATUSES.has(status);
}

/** The disposition table of docs/reference/redeem.md#dispositions. */
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
 * results, replays, GET /v1/jobs/{id}, webhook payloads). A stock code is masked (docs/reference/redeem.md#stock-codes-are-masked):
 * the merchant holds it already, and a request that returns it to stock must reveal nothing
 * usable, so it is never decrypted here. A caller code is echoed as sent, until retention dropped
 * its ciphertext (docs/reference/running.md#retention); from then on it is masked too.
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
 * A job's result body (docs/reference/redeem.md#the-result): `ok` first, then `ids` (request_id, and job_id for a
 * job's view), as in the documented result (docs/reference/redeem.md#the-result). `sent`: the caller's codes of the request being
 * answered, by position (a fresh sync answer), shown as sent instead of decrypted.
 */
export function buildResult<Ids extends { request_id: string | null }>(
  job: Pick<JobRow, 'customerId' | 'mode' | 'source' | 'playerId' | 'reference'>,
  rows: JobCodeRow[],
  codeKey: Buffer,
  ids: Ids,
  sent?: readonly string[],
) {
  const codes = codeResults(job, rows, codeKey, sent);
  const summary = Object.fromEntries(CODE_STATUSES.map((s) => [s, 0])) as Record<ActivationStatus, number>;
  let ucDelivered = 0;
  let billed = 0;
  for (const c of codes) {
    if (c.status in summary) summary[c.status as keyof typeof summary] += 1;
    if (c.status === 'activated') ucDelivered += c.uc ?? 0;
    if (c.billed) billed += 1;
  }
  return {
    ok: summary.activated > 0,
    ...ids,
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
