// Settling quarantined codes (contract section 3: `quarantined` is held until checked). A code
// whose activation outcome is unknown may have been consumed upstream. A status check settles it:
//   used   → the code is gone: a stock code is deleted, and one request is billed, as code_used;
//   unused → a stock code goes back to stock; a caller code stays kept; nothing is billed.
// The outcome the caller was answered stays as recorded, so a replay never changes.

import type { Queryable } from '../../db/database.ts';
import type { Mode } from '../accounts/accounts.ts';
import { isoUtc } from '../clock.ts';
import type { RedeemDeps } from '../context.ts';
import { decryptCode } from '../crypto/code-crypto.ts';
import type { Actor } from '../operators/actor.ts';
import { recordAudit } from '../operators/audit.ts';
import { setStockState } from '../stock/stock.ts';
import { lockAccount } from './billing.ts';

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
 * Settles one quarantined code in one transaction. Returns false when it is not (or no longer)
 * quarantined and unsettled: settling twice never bills twice.
 */
export async function settleQuarantined(
  deps: Pick<RedeemDeps, 'db' | 'clock' | 'metrics'>,
  ref: { jobId: string; position: number },
  settlement: Settlement,
  by: 'check' | 'operator',
  /** The operator who settled it by hand: the audit row is written in the settlement's transaction. */
  actor?: Actor,
): Promise<boolean> {
  const { clock } = deps;
  const settled = await deps.db.transaction(async (tx) => {
    const job = await tx.query<{ customerId: number; mode: Mode }>(
      'select customer_id as "customerId", mode from jobs where id = $1',
      [ref.jobId],
    );
    if (!job.rows[0]) return null;
    const { customerId, mode } = job.rows[0];
    // The account row first, as every billing path does, then the code's row.
    await lockAccount(tx, customerId, mode);
    const row = await tx.query<{ stockId: number | null }>(
      `select stock_id as "stockId" from job_codes
        where job_id = $1 and position = $2 and disposition = 'quarantined' and settled_at is null and not reused
        for update`,
      [ref.jobId, ref.position],
    );
    if (!row.rows[0]) return null;
    const stockId = row.rows[0].stockId;
    if (stockId !== null)
      await setStockState(tx, [stockId], settlement === 'used' ? 'deleted' : 'available', clock);
    const walletMicros = settlement === 'used' ? await billSettledRequest(tx, ref.jobId, clock.now()) : 0;
    await tx.query(
      `update job_codes set settlement = $3, settled_at = $4, settled_by = $5 where job_id = $1 and position = $2`,
      [ref.jobId, ref.position, settlement, clock.now(), by],
    );
    if (actor) {
      await recordAudit(
        tx,
        actor,
        {
          action: 'quarantine.settle',
          customerId,
          target: ref.jobId,
          details: { job_id: ref.jobId, position: ref.position, mode, outcome: settlement },
        },
        clock,
      );
    }
    return { mode, settlement, by, walletMicros };
  });
  // Counted after the commit: a rolled-back settlement counts nothing.
  if (settled) deps.metrics?.quarantineSettled(settled);
  return settled !== null;
}

/**
 * Bills one request for a code found used after all, on the day its job was held: from that
 * day's include while any is left under the current plan, else from the wallet at the job's rate.
 * The outcome happened, so it is billed even when the wallet cannot pay (the balance may go
 * below zero; the ledger still sums to it). Returns the micro-dollars taken from the wallet.
 */
async function billSettledRequest(tx: Queryable, jobId: string, now: Date): Promise<number> {
  const r = await tx.query<{
    customerId: number;
    mode: Mode;
    day: string;
    rateMicros: number;
    dailyLimit: number | null;
    hasPlan: boolean;
    used: number;
    overage: number;
  }>(
    `select j.customer_id as "customerId", j.mode, to_char(j.hold_day, 'YYYY-MM-DD') as day, j.rate_micros as "rateMicros",
            p.daily_limit as "dailyLimit", p.customer_id is not null as "hasPlan",
            coalesce(u.used, 0) as used, coalesce(u.overage, 0) as overage
       from jobs j
       left join plans p on p.customer_id = j.customer_id
       left join daily_usage u on u.customer_id = j.customer_id and u.mode = j.mode and u.day = j.hold_day
      where j.id = $1`,
    [jobId],
  );
  const j = r.rows[0]!;
  const included = j.hasPlan && j.dailyLimit !== null && j.used - j.overage < j.dailyLimit;
  await tx.query(
    `insert into daily_usage (customer_id, mode, day, used, overage) values ($1, $2, $3, 1, $4)
     on conflict (customer_id, mode, day) do update
       set used = daily_usage.used + 1, overage = daily_usage.overage + excluded.overage`,
    [j.customerId, j.mode, j.day, included ? 0 : 1],
  );
  if (included || j.rateMicros === 0) return 0;
  const b = await tx.query<{ balance: number }>(
    `update accounts set balance_micros = balance_micros - $3 where customer_id = $1 and mode = $2
     returning balance_micros as balance`,
    [j.customerId, j.mode, j.rateMicros],
  );
  await tx.query(
    `insert into wallet_ledger (customer_id, mode, amount_micros, balance_after_micros, kind, note, reference, created_at)
     values ($1, $2, $3, $4, 'charge', 'quarantined code settled as used (code_used)', $5, $6)`,
    [j.customerId, j.mode, -j.rateMicros, b.rows[0]!.balance, jobId, now],
  );
  return j.rateMicros;
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
  opts: { limit?: number; all?: boolean } = {},
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
    if (await settleQuarantined(deps, c, settlement, 'check')) summary[settlement] += 1;
  }
  return summary;
}
