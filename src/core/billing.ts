// Billing a redeem (contract section 2): one decision before any attempt, then one capture or
// release per code. Included requests are used before wallet ones; refunds give back wallet
// requests first. All functions take the transaction that also records the code's outcome.
import type { Queryable } from '../db/database.ts';
import { ApiError } from '../http/errors.ts';
import {
  type AccountState,
  loadAccountState,
  type Mode,
  remainingToday,
  spendableMicros,
} from './accounts.ts';
import { type Clock, isoUtc, secondsUntilUtcMidnight, utcDay } from './clock.ts';
import { ensureAccount } from './wallet.ts';

export interface Hold {
  day: string;
  rateMicros: number;
  included: number;
  wallet: number;
}

/** Locks the account row of a customer and mode until the transaction ends. */
export async function lockAccount(tx: Queryable, customerId: number, mode: Mode): Promise<void> {
  const lock = () =>
    tx.query(
      'select 1 from accounts where customer_id = $1 and mode = $2 for update',
      [customerId, mode],
      'account_lock',
    );
  // The row exists after the first top-up or redeem: made only when missing, not on every call.
  if ((await lock()).rows.length > 0) return;
  await ensureAccount(tx, customerId, mode);
  await lock();
}

/**
 * Step 12 of the request checks: decides how `requests` would be held, or throws the refusal.
 * Call with the account row locked; pure apart from reading `state`.
 */
export function decideHold(state: AccountState, requests: number, now: Date): Hold {
  const plan = state.plan;
  if (!plan?.active) throw new ApiError('no_plan', 'no active API plan on this account');
  const sub = state.subscription;
  if (sub.required && sub.expiresAt && sub.expiresAt.getTime() <= now.getTime()) {
    throw new ApiError('subscription_expired', 'the bot subscription has expired', {
      subscription_expired_at: isoUtc(sub.expiresAt),
    });
  }
  const included = Math.min(requests, remainingToday(state));
  const wallet = requests - included;
  if (wallet > 0) {
    if (plan.dailyLimit !== null && !plan.overage) {
      const wait = secondsUntilUtcMidnight(now);
      throw new ApiError(
        'quota_exceeded',
        'the daily include is used up',
        { retry_after_sec: wait },
        { 'Retry-After': String(wait) },
      );
    }
    if (spendableMicros(state) < wallet * plan.perRequestMicros) {
      throw new ApiError('insufficient_funds', 'wallet balance too low; top up through the bot, then retry');
    }
  }
  return { day: utcDay(now), rateMicros: plan.perRequestMicros, included, wallet };
}

/** Loads the locked account state for a decision. */
export async function loadLockedState(tx: Queryable, customerId: number, mode: Mode, now: Date) {
  await lockAccount(tx, customerId, mode);
  const state = await loadAccountState(tx, customerId, mode, utcDay(now));
  if (!state) throw new ApiError('unknown_customer', 'the customer of this key is not active');
  return state;
}

/** Records a decided hold: daily usage and the wallet's open holds. The job row carries the counts. */
export async function applyHold(tx: Queryable, customerId: number, mode: Mode, hold: Hold): Promise<void> {
  const requests = hold.included + hold.wallet;
  if (requests === 0) return;
  await tx.query(
    `insert into daily_usage (customer_id, mode, day, used, overage) values ($1, $2, $3, $4, $5)
     on conflict (customer_id, mode, day) do update
       set used = daily_usage.used + excluded.used, overage = daily_usage.overage + excluded.overage`,
    [customerId, mode, hold.day, requests, hold.wallet],
    'usage_hold',
  );
  // A free plan's wallet requests hold nothing: no write that changes nothing.
  if (hold.wallet > 0 && hold.rateMicros > 0) {
    await tx.query(
      'update accounts set held_micros = held_micros + $3 where customer_id = $1 and mode = $2',
      [customerId, mode, hold.wallet * hold.rateMicros],
      'wallet_hold',
    );
  }
}

interface JobHoldRow {
  customerId: number;
  mode: Mode;
  day: string;
  rateMicros: number;
  openIncluded: number;
  openWallet: number;
}

async function lockJobHold(tx: Queryable, jobId: string): Promise<JobHoldRow> {
  const r = await tx.query<JobHoldRow>(
    `select customer_id as "customerId", mode, to_char(hold_day, 'YYYY-MM-DD') as day, rate_micros as "rateMicros",
            hold_included - captured_included - released_included as "openIncluded",
            hold_wallet - captured_wallet - released_wallet as "openWallet"
       from jobs where id = $1 for update`,
    [jobId],
    'job_hold_lock',
  );
  const row = r.rows[0];
  if (!row) throw new Error(`job ${jobId} not found`);
  return row;
}

/**
 * Bills one held request of a job: from the include while any is open, else from the wallet.
 * Returns the micro-dollars taken from the wallet (0 for an included request).
 */
export async function captureOne(tx: Queryable, jobId: string, clock: Clock): Promise<number> {
  const job = await lockJobHold(tx, jobId);
  if (job.openIncluded > 0) {
    await tx.query(
      'update jobs set captured_included = captured_included + 1 where id = $1',
      [jobId],
      'capture_included',
    );
    return 0;
  }
  if (job.openWallet <= 0) throw new Error(`job ${jobId} has no open hold to capture`);
  await tx.query(
    'update jobs set captured_wallet = captured_wallet + 1 where id = $1',
    [jobId],
    'capture_wallet',
  );
  // A $0 request moves no money: no balance update, no ledger row of 0.
  if (job.rateMicros === 0) return 0;
  // The ledger entry and the balance move together; the hold is let go in the same step.
  const r = await tx.query<{ balance: number }>(
    `update accounts set balance_micros = balance_micros - $3, held_micros = held_micros - $3
      where customer_id = $1 and mode = $2 returning balance_micros as balance`,
    [job.customerId, job.mode, job.rateMicros],
    'wallet_charge',
  );
  await tx.query(
    `insert into wallet_ledger (customer_id, mode, amount_micros, balance_after_micros, kind, note, reference, created_at)
     values ($1, $2, $3, $4, 'charge', 'redeem request', $5, $6)`,
    [job.customerId, job.mode, -job.rateMicros, r.rows[0]!.balance, jobId, clock.now()],
    'ledger_charge',
  );
  return job.rateMicros;
}

/** Refunds one held request of a job: a wallet one while any is open, else an included one. */
export async function releaseOne(tx: Queryable, jobId: string): Promise<void> {
  const job = await lockJobHold(tx, jobId);
  const fromWallet = job.openWallet > 0;
  if (!fromWallet && job.openIncluded <= 0) throw new Error(`job ${jobId} has no open hold to release`);
  // The account row before daily_usage, as every billing path takes them (phase 1 holds the
  // account while it adds to daily_usage): the other order deadlocks on PostgreSQL.
  await lockAccount(tx, job.customerId, job.mode);
  await tx.query(
    fromWallet
      ? 'update jobs set released_wallet = released_wallet + 1 where id = $1'
      : 'update jobs set released_included = released_included + 1 where id = $1',
    [jobId],
    fromWallet ? 'release_wallet' : 'release_included',
  );
  await tx.query(
    `update daily_usage set used = used - 1, overage = overage - $4
      where customer_id = $1 and mode = $2 and day = $3`,
    [job.customerId, job.mode, job.day, fromWallet ? 1 : 0],
    'usage_release',
  );
  if (fromWallet && job.rateMicros > 0) {
    await tx.query(
      'update accounts set held_micros = held_micros - $3 where customer_id = $1 and mode = $2',
      [job.customerId, job.mode, job.rateMicros],
      'wallet_release',
    );
  }
}
