// The quarantine's status check, a pass of the sweeper (and of an operator's POST
// /admin/v1/quarantine/check): it claims the quarantined codes that are due, asks the upstream
// about each, and settles what the upstream can tell (settleQuarantined, core/billing/quarantine.ts).
// It stands above billing and jobs: the claim and the pause are writes to job_codes, which only
// core/jobs/codes.ts makes.

import { type Settlement, settleQuarantined } from '../billing/quarantine.ts';
import type { RedeemDeps } from '../context.ts';
import { decryptCode } from '../crypto/code-crypto.ts';
import { claimQuarantinedForCheck, recheckLater } from '../jobs/codes.ts';
import type { Actor } from '../operators/actor.ts';

/** A first check waits this long after the attempt: a slow upstream may still be working on it. */
export const FIRST_CHECK_AFTER_MS = 60_000;
/** Pauses between checks of a code the upstream cannot tell about: 1 min, doubling, at most 1 h. */
const checkBackoffMs = (attempts: number) => Math.min(3_600_000, 60_000 * 2 ** Math.max(0, attempts - 1));

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
  const claimed = await claimQuarantinedForCheck(deps.db, {
    now,
    nextCheckAt: new Date(now.getTime() + checkBackoffMs(1)),
    limit: opts.limit ?? 50,
    all: opts.all === true,
    firstCheckAfterMs: FIRST_CHECK_AFTER_MS,
  });
  const summary: CheckSummary = { checked: 0, used: 0, unused: 0, unknown: 0 };
  for (const c of claimed) {
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
      await recheckLater(deps.db, c, new Date(now.getTime() + checkBackoffMs(c.attempts)));
      continue;
    }
    const settlement: Settlement = answer.redeemed ? 'used' : 'unused';
    if (await settleQuarantined(deps, c, settlement, 'check', opts.actor)) summary[settlement] += 1;
  }
  return summary;
}
