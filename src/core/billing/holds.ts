// Billing a redeem (docs/reference/billing-and-quota.md#capture-and-release): one hold decided before any attempt, then one capture
// or release per code. Included requests are used before wallet ones; refunds give back wallet
// requests first. The rules live in SQL functions (src/db/functions/billing.sql: billing_hold,
// billing_capture_one, billing_release_one; account_lock in accounts.sql), so the redeem hot path, recovery and
// quarantine settlement all run the same code; these are their wrappers. Each takes the
// transaction that also records the code's outcome.
import type { Queryable } from '../../db/database.ts';
import { isoUtc, secondsUntilUtcMidnight } from '../clock.ts';
import { ApiError } from '../errors.ts';
import type { Mode } from '../vocabulary.ts';

/** Locks the account row of a customer and mode until the transaction ends (made when missing). */
export async function lockAccount(tx: Queryable, customerId: number, mode: Mode): Promise<void> {
  await tx.query('select account_lock($1, $2)', [customerId, mode], 'account_lock');
}

/** A refusal of billing_hold (step 12 of docs/reference/redeem.md#validation-order). */
export interface BillingRefusal {
  refusal: 'unknown_customer' | 'no_plan' | 'subscription_expired' | 'quota_exceeded' | 'insufficient_funds';
  subExpiresAt?: string;
}

/** The answer to a billing refusal decided at `now` (docs/reference/billing-and-quota.md#billing-a-redeem). */
export function billingRefusalError(r: BillingRefusal, now: Date): ApiError {
  switch (r.refusal) {
    case 'unknown_customer':
      return new ApiError('unknown_customer', 'the customer of this key is not active');
    case 'no_plan':
      return new ApiError('no_plan', 'no active API plan on this account');
    case 'subscription_expired':
      return new ApiError('subscription_expired', 'the bot subscription has expired', {
        subscription_expired_at: isoUtc(new Date(r.subExpiresAt!)),
      });
    case 'quota_exceeded': {
      const wait = secondsUntilUtcMidnight(now);
      return new ApiError(
        'quota_exceeded',
        'the daily include is used up',
        { retry_after_sec: wait },
        { 'Retry-After': String(wait) },
      );
    }
    case 'insufficient_funds':
      return new ApiError('insufficient_funds', 'wallet balance too low; top up through the bot, then retry');
  }
}

/** Refunds one held request of a job: a wallet one while any is open, else an included one. */
export async function releaseOne(tx: Queryable, customerId: number, jobId: string): Promise<void> {
  await tx.query('select billing_release_one($1, $2)', [customerId, jobId], 'release_one');
}
