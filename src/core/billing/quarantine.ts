// Settling quarantined codes (docs/reference/redeem.md#dispositions: `quarantined` is held until checked). A code
// whose activation outcome is unknown may have been consumed upstream. A status check settles it:
//   used   → the code is gone: a stock code is deleted, and one request is billed, as code_used;
//   unused → a stock code goes back to stock; a caller code stays kept; nothing is billed.
// The settlement itself is the SQL function quarantine_settle (src/db/functions/billing.sql).
// The outcome the caller was answered stays as recorded, so a replay never changes.
import type { Queryable } from '../../db/database.ts';
import { isoUtc } from '../clock.ts';
import type { RedeemDeps } from '../context.ts';
import type { Actor } from '../operators/actor.ts';
import { recordAudit } from '../operators/audit.ts';
import type { Mode } from '../vocabulary.ts';

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
       from job_codes c join jobs j on j.customer_id = c.customer_id and j.id = c.job_id
      where c.disposition = 'quarantined' and c.settled_at is null and not c.reused
        and ($1::bigint is null or j.customer_id = $1) and ($2::text is null or j.mode = $2)
      order by c.finished_at, c.job_id, c.position
      limit $3`,
    [filter.customerId ?? null, filter.mode ?? null, filter.limit ?? 500],
  );
  return r.rows;
}

/**
 * How long the quarantine list keeps a settled code, with how it settled, after it settled: a
 * week, so an operator asked "what happened to my code" on Monday can still read Friday's
 * settlement (the settlement itself stays on the job's code for good).
 */
export const QUARANTINE_SETTLED_DAYS = 7;

export interface SettledCode extends QuarantinedCode {
  settlement: Settlement;
  settledAt: Date;
  /** What settled it: the status check (automatic, or run by an operator), or an operator's word. */
  settledBy: 'check' | 'operator';
  /** The operator who settled it or ran the check; null for the automatic check. */
  settledActor: string | null;
}

/** Codes settled in the last QUARANTINE_SETTLED_DAYS days, newest settlement first. */
export async function listSettledQuarantine(
  q: Queryable,
  now: Date,
  filter: { customerId?: number; mode?: Mode; limit?: number } = {},
): Promise<SettledCode[]> {
  const r = await q.query<SettledCode>(
    `select c.job_id as "jobId", c.position, j.customer_id as "customerId", j.mode, j.source, c.stock_id as "stockId",
            c.last4, c.category, c.finished_at as "quarantinedAt", c.check_attempts as "checkAttempts",
            c.settlement, c.settled_at as "settledAt", c.settled_by as "settledBy", c.settled_actor as "settledActor"
       from job_codes c join jobs j on j.customer_id = c.customer_id and j.id = c.job_id
      where c.disposition = 'quarantined' and c.settled_at is not null and c.settled_at >= $1
        and ($2::bigint is null or j.customer_id = $2) and ($3::text is null or j.mode = $3)
      order by c.settled_at desc, c.job_id, c.position
      limit $4`,
    [
      new Date(now.getTime() - QUARANTINE_SETTLED_DAYS * 86_400_000),
      filter.customerId ?? null,
      filter.mode ?? null,
      filter.limit ?? 500,
    ],
  );
  return r.rows;
}

export const settledView = (c: SettledCode) => ({
  ...quarantinedView(c),
  settlement: c.settlement,
  settled_at: isoUtc(c.settledAt),
  settled_by: c.settledBy,
  settled_actor: c.settledActor,
});

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
    // The job's customer first, so the settlement runs on that customer's worker on Citus.
    const owner = await tx.query<{ customerId: number }>(
      'select customer_id as "customerId" from jobs where id = $1',
      [ref.jobId],
    );
    const customerId = owner.rows[0]?.customerId;
    if (customerId === undefined) return null;
    const r = await tx.query<{ settled: { customer_id: number; mode: Mode; wallet_micros: number } | null }>(
      // Who settled it is kept beside the settlement for the quarantine list (the audit row says it too).
      'select quarantine_settle($1, $2, $3, $4, $5, $6, $7) as settled',
      [customerId, ref.jobId, ref.position, settlement, by, clock.now(), actor?.name ?? null],
    );
    const done = r.rows[0]!.settled;
    if (done && actor) {
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
    }
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
