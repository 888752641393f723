// Settling quarantined codes (contract section 3: `quarantined` is held until checked). A code
// whose activation outcome is unknown may have been consumed upstream. A status check settles it:
//   used   → the code is gone: a stock code is deleted, and one request is billed, as code_used;
//   unused → a stock code goes back to stock; a caller code stays kept; nothing is billed.
// The settlement itself is the SQL function quarantine_settle (src/db/functions/billing.sql).
// The outcome the caller was answered stays as recorded, so a replay never changes.
import type { Queryable } from '../../db/database.ts';
import { isoUtc } from '../clock.ts';
import type { RedeemDeps } from '../context.ts';
import { decryptCode } from '../crypto/code-crypto.ts';
import type { Actor } from '../operators/actor.ts';
import { recordAudit } from '../operators/audit.ts';
import type { Mode } from '../vocabulary.ts';

/** A first check waits this long after the attempt: a slow upstream may still be working on it. */
export const FIRST_CHECK_AFTER_MS = 60_000;
/** Pauses between checks of a code the upstream cannot tell about: 1 min, doubling, at most 1 h. */
const checkBackoffMs = (attempts: number) => Math.min(3_600_000, 60_000 * 2 ** Math.max(0, attempts - 1));

export type Settlement = 'used' | 'unused';

export interface QuarantinedCode {
  jobId: string;
  position: number;
  customerId: number;
  mode: Mode;
  source: 'codes' | 'stock';
  stockId: number | null;
  last4: string;
  category: string | null;
  quarantinedAt: Date;
  checkAttempts: number;
}

export async function listQuarantined(
  q: Queryable,
  filter: { customerId?: number; mode?: Mode; limit?: number } = {},
): Promise<QuarantinedCode[]> {
  const r = await q.query<QuarantinedCode>(
    `select c.job_id as "jobId", c.position, j.customer_id as "customerId", j.mode, j.source, c.stock_id as "stockId",
            c.last4, c.category, c.finished_at as "quarantinedAt", c.check_attempts as "checkAttempts"
       from job_codes c join jobs j on j.id = c.job_id
      where c.disposition = 'quarantined' and c.settled_at is null and not c.reused
        and ($1::bigint is null or j.customer_id = $1) and ($2::text is null or j.mode = $2)
      order by c.finished_at, c.job_id, c.position
      limit $3`,
    [filter.customerId ?? null, filter.mode ?? null, filter.limit ?? 500],
  );
  return r.rows;
}

export const quarantinedView = (c: QuarantinedCode) => ({
  job_id: c.jobId,
  position: c.position,
  customer_id: c.customerId,
  mode: c.mode,
  source: c.source,
  stock_id: c.stockId,
  code_last4: c.last4,
  category: c.category,
  quarantined_at: isoUtc(c.quarantinedAt),
  check_attempts: c.checkAttempts,
});

/**
 * Settles one quarantined code in one statement (SQL quarantine_settle, beside the other money
 * rules in src/db/functions/billing.sql). Returns false when it is not (or no longer) quarantined
 * and unsettled: settling twice never bills twice.
 */
export async function settleQuarantined(
  deps: Pick<RedeemDeps, 'db' | 'clock' | 'metrics'>,
  ref: { jobId: string; position: number },
  settlement: Settlement,
  by: 'check' | 'operator',
  /**
   * The operator who settled it, by hand or by running the check: the audit row is written in the
   * settlement's transaction. None for the automatic checker (no operator acted).
   */
  actor?: Actor,
): Promise<boolean> {
  const { clock } = deps;
  const settled = await deps.db.transaction(async (tx) => {
    const r = await tx.query<{ settled: { customer_id: number; mode: Mode; wallet_micros: number } | null }>(
      'select quarantine_settle($1, $2, $3, $4, $5) as settled',
      [ref.jobId, ref.position, settlement, by, clock.now()],
    );
    const done = r.rows[0]!.settled;
    if (done && actor)
      await recordAudit(
        tx,
        actor,
        {
          action: 'quarantine.settle',
          customerId: done.customer_id,
          target: ref.jobId,
          details: {
            job_id: ref.jobId,
            position: ref.position,
            mode: done.mode,
            outcome: settlement,
            // Settled by the status check an operator ran (POST /admin/v1/quarantine/check).
            ...(by === 'check' ? { by } : {}),
          },
        },
        clock,
      );
    return done;
  });
  // Counted after the commit: a rolled-back settlement counts nothing.
  if (settled)
    deps.metrics?.quarantineSettled({
      mode: settled.mode,
      settlement,
      by,
      walletMicros: settled.wallet_micros,
    });
  return settled !== null;
}

export interface CheckSummary {
  checked: number;
  used: number;
  unused: number;
  unknown: number;
}

/**
 * One pass of the status check: claims up to `limit` quarantined codes that are due (a claim
 * pushes the next check back, so two processes never check one code at once), asks the
 * activator, and settles what it can tell. With `all`, codes are due at once (the operator asked).
 */
export async function checkQuarantined(
  deps: RedeemDeps,
  opts: {
    limit?: number;
    all?: boolean;
    /** The operator who asked for this check: each code it settles is audited as theirs. */
    actor?: Actor;
  } = {},
): Promise<CheckSummary> {
  const now = deps.clock.now();
  const claimed = await deps.db.query<{
    jobId: string;
    position: number;
    customerId: number;
    mode: Mode;
    codeHash: string;
    codeEncrypted: string;
    last4: string;
    attempts: number;
  }>(
    `update job_codes c set check_attempts = c.check_attempts + 1, next_check_at = $2
       from jobs j
      where j.id = c.job_id and (c.job_id, c.position) in (
              select job_id, position from job_codes
               where disposition = 'quarantined' and settled_at is null and not reused
                 and ($4 or coalesce(next_check_at, finished_at + $5 * interval '1 millisecond') <= $1)
               order by finished_at limit $3
               for update skip locked)
      returning c.job_id as "jobId", c.position, j.customer_id as "customerId", j.mode, c.code_hash as "codeHash",
                c.code_encrypted as "codeEncrypted", c.last4,
                c.check_attempts as attempts`,
    [
      now,
      new Date(now.getTime() + checkBackoffMs(1)),
      opts.limit ?? 50,
      opts.all === true,
      FIRST_CHECK_AFTER_MS,
    ],
  );
  const summary: CheckSummary = { checked: 0, used: 0, unused: 0, unknown: 0 };
  for (const c of claimed.rows) {
    summary.checked += 1;
    let answer: { redeemed: boolean } | null = null;
    try {
      answer = await deps.activatorFor(c.mode).status({
        mode: c.mode,
        code: decryptCode(deps.codeKey, c.codeEncrypted, {
          table: 'job_codes',
          customerId: c.customerId,
          mode: c.mode,
          codeHash: c.codeHash,
        }),
      });
    } catch (err) {
      deps.logger.warn({ err, jobId: c.jobId, last4: c.last4 }, 'status check failed');
    }
    if (!answer) {
      summary.unknown += 1;
      await deps.db.query('update job_codes set next_check_at = $3 where job_id = $1 and position = $2', [
        c.jobId,
        c.position,
        new Date(now.getTime() + checkBackoffMs(c.attempts)),
      ]);
      continue;
    }
    const settlement: Settlement = answer.redeemed ? 'used' : 'unused';
    if (await settleQuarantined(deps, c, settlement, 'check', opts.actor)) summary[settlement] += 1;
  }
  return summary;
}
