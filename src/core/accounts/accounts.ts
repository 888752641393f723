// Customers, plans, bot subscriptions and the account record of GET /v1/me.
import type { Queryable } from '../../db/database.ts';
import { type Clock, isoUtc, utcDay } from '../clock.ts';
import { usdNumber } from '../money.ts';
import type { Mode } from '../vocabulary.ts';

export interface Plan {
  label: string;
  dailyLimit: number | null;
  perRequestMicros: number;
  overage: boolean;
  active: boolean;
}

export interface Subscription {
  required: boolean;
  expiresAt: Date | null;
}

/** Everything billing and GET /v1/me need about one customer in one mode, as of `day`. */
export interface AccountState {
  customerId: number;
  disabled: boolean;
  plan: Plan | null;
  subscription: Subscription;
  balanceMicros: number;
  heldMicros: number;
  usedToday: number;
  overageToday: number;
}

export async function createCustomer(q: Queryable, name: string, clock: Clock): Promise<number> {
  const r = await q.query<{ id: number }>(
    'insert into customers (name, created_at) values ($1, $2) returning id',
    [name, clock.now()],
  );
  return r.rows[0]!.id;
}

/** Whether any customer exists (the demo seeds an empty database only). */
export async function anyCustomer(q: Queryable): Promise<boolean> {
  return (await q.query('select 1 from customers limit 1')).rows.length > 0;
}

export async function customerExists(q: Queryable, customerId: number): Promise<boolean> {
  const r = await q.query('select 1 from customers where id = $1', [customerId]);
  return r.rows.length > 0;
}

export async function disableCustomer(q: Queryable, customerId: number, clock: Clock): Promise<boolean> {
  const r = await q.query('update customers set disabled_at = coalesce(disabled_at, $2) where id = $1', [
    customerId,
    clock.now(),
  ]);
  return r.rowCount > 0;
}

/** Enables a disabled customer again; returns the time it had been disabled at (null: it was not). */
export async function enableCustomer(
  q: Queryable,
  customerId: number,
): Promise<{ found: boolean; disabledAt: Date | null }> {
  // The row is locked first, so the time read is the one this update clears.
  const r = await q.query<{ disabledAt: Date | null }>(
    'select disabled_at as "disabledAt" from customers where id = $1 for update',
    [customerId],
  );
  if (r.rows.length > 0) await q.query('update customers set disabled_at = null where id = $1', [customerId]);
  return { found: r.rows.length > 0, disabledAt: r.rows[0]?.disabledAt ?? null };
}

export async function setPlan(q: Queryable, customerId: number, plan: Plan, clock: Clock): Promise<void> {
  await q.query(
    `insert into plans (customer_id, label, daily_limit, per_request_micros, overage, active, updated_at)
     values ($1, $2, $3, $4, $5, $6, $7)
     on conflict (customer_id) do update set label = excluded.label, daily_limit = excluded.daily_limit,
       per_request_micros = excluded.per_request_micros, overage = excluded.overage,
       active = excluded.active, updated_at = excluded.updated_at`,
    [customerId, plan.label, plan.dailyLimit, plan.perRequestMicros, plan.overage, plan.active, clock.now()],
  );
}

export async function deletePlan(q: Queryable, customerId: number): Promise<void> {
  await q.query('delete from plans where customer_id = $1', [customerId]);
}

export async function setSubscription(q: Queryable, customerId: number, sub: Subscription): Promise<void> {
  await q.query(
    'update customers set subscription_required = $2, subscription_expires_at = $3 where id = $1',
    [customerId, sub.required, sub.expiresAt],
  );
}

/** An account as read by SQL (account_row gives Date, account_state's jsonb an ISO string). */
export interface AccountRow {
  disabled: boolean;
  subRequired: boolean;
  subExpiresAt: Date | string | null;
  label: string | null;
  dailyLimit: number | null;
  perRequestMicros: number | null;
  overage: boolean | null;
  active: boolean | null;
  balanceMicros: number;
  heldMicros: number;
  usedToday: number;
  overageToday: number;
}

// The one account view is the SQL function account_row (src/db/functions/accounts.sql), and
// account_state gives the same fields as jsonb. A query that also reads other customer tables
// joins accountRowSql instead: on Citus a function that reads customer tables cannot be called
// inside a query that Citus sends to a worker whole (docs/running/citus.md).
const LOAD_ACCOUNT_SQL = 'select a.* from account_row($1, $2, $3::date) a';

/**
 * account_row's query as a subquery for `cross join lateral` (the same columns, the same joins,
 * written once more here; test/db/account-view.test.ts compares the two): `customer`, `mode` and
 * `day` are SQL expressions. `customer` is the statement's parameter, not the outer row's column:
 * correlated to a column, Citus plans the lateral join on every shard (a GET /v1/me then failed
 * while any worker was down); filtered by the parameter, on the customer's worker alone
 * (docs/running/citus.md#one-worker-per-statement).
 */
export function accountRowSql(customer: string, mode: string, day: string): string {
  return `(select c.disabled_at is not null as "disabled", c.subscription_required as "subRequired",
         c.subscription_expires_at as "subExpiresAt", p.label, p.daily_limit as "dailyLimit",
         p.per_request_micros as "perRequestMicros", p.overage, p.active,
         coalesce(a.balance_micros, 0)::int8 as "balanceMicros", coalesce(a.held_micros, 0)::int8 as "heldMicros",
         coalesce(u.used, 0) as "usedToday", coalesce(u.overage, 0) as "overageToday"
    from customers c
    left join plans p on p.customer_id = c.id
    left join accounts a on a.customer_id = c.id and a.mode = ${mode}
    left join daily_usage u on u.customer_id = c.id and u.mode = ${mode} and u.day = ${day}
   where c.id = ${customer})`;
}

/** Loads the account state of one customer in one mode, as of `day`. */
export async function loadAccountState(
  q: Queryable,
  customerId: number,
  mode: Mode,
  day: string,
): Promise<AccountState | null> {
  const r = await q.query<AccountRow>(LOAD_ACCOUNT_SQL, [customerId, mode, day], 'account_state');
  const row = r.rows[0];
  return row ? accountStateFrom(customerId, row) : null;
}

const LOAD_KEY_ACCOUNT_SQL = `select k.revoked_at as "revokedAt", k.expires_at as "expiresAt", a.*
       from api_keys k
       cross join lateral ${accountRowSql('$3', 'k.mode', '$2::date')} a
      where k.customer_id = $3 and k.id = $1`;

/**
 * The account of a key's customer in the key's mode, with what can change about the key
 * (revocation) and its customer (disabled), and the key's read slot (docs/reference/limits.md#read-budget) taken: GET
 * /v1/me in one statement, so a cached key is checked again by the statement that answers the
 * request, and the read counts itself there.
 */
export async function loadKeyAccountState(
  q: Queryable,
  key: { id: string; customerId: number },
  day: string,
): Promise<{
  revokedAt: Date | null;
  expiresAt: Date | null;
  state: AccountState;
} | null> {
  const r = await q.query<
    AccountRow & {
      revokedAt: Date | null;
      expiresAt: Date | null;
    }
  >(LOAD_KEY_ACCOUNT_SQL, [key.id, day, key.customerId], 'key_account_state');
  const row = r.rows[0];
  // The expiry is read again too: a reroll (docs/reference/operators-and-audit.md#key-reroll) moves it after a process cached the key.
  return row
    ? {
        revokedAt: row.revokedAt,
        expiresAt: row.expiresAt,
        state: accountStateFrom(key.customerId, row),
      }
    : null;
}

export function accountStateFrom(customerId: number, row: AccountRow): AccountState {
  return {
    customerId,
    disabled: row.disabled,
    plan:
      row.label === null
        ? null
        : {
            label: row.label,
            dailyLimit: row.dailyLimit,
            perRequestMicros: row.perRequestMicros!,
            overage: row.overage!,
            active: row.active!,
          },
    subscription: {
      required: row.subRequired,
      expiresAt: row.subExpiresAt === null ? null : new Date(row.subExpiresAt),
    },
    balanceMicros: row.balanceMicros,
    heldMicros: row.heldMicros,
    usedToday: row.usedToday,
    overageToday: row.overageToday,
  };
}

/** Included requests left today: 0 for no plan or an uncapped plan (everything goes to the wallet). */
export function remainingToday(s: Pick<AccountState, 'plan' | 'usedToday' | 'overageToday'>): number {
  if (!s.plan || s.plan.dailyLimit === null) return 0;
  return Math.max(0, s.plan.dailyLimit - (s.usedToday - s.overageToday));
}

export const spendableMicros = (s: AccountState) => s.balanceMicros - s.heldMicros;

export function subscriptionView(sub: Subscription, now: Date) {
  if (!sub.required) return { required: false, active: true, expires_at: null, days_left: null };
  const expiresAt = sub.expiresAt;
  const active = expiresAt === null || expiresAt.getTime() > now.getTime();
  return {
    required: true,
    active,
    expires_at: expiresAt ? isoUtc(expiresAt) : null,
    days_left: expiresAt ? Math.max(0, Math.floor((expiresAt.getTime() - now.getTime()) / 86_400_000)) : null,
  };
}

/** The answer of GET /v1/me (docs/reference/billing-and-quota.md#the-account-record): the calling key and its account record. */
export function meView(
  requestId: string,
  key: { customerId: number; keyPrefix: string; scopes: readonly string[]; mode: string },
  s: AccountState,
  now: Date,
) {
  return {
    ok: true,
    request_id: requestId,
    customer_id: key.customerId,
    key_prefix: key.keyPrefix,
    scopes: key.scopes,
    mode: key.mode,
    ...accountView(s, now),
  };
}

/** The account record of GET /v1/me, less ok/request_id and the key fields. */
export function accountView(s: AccountState, now: Date) {
  const plan = s.plan;
  return {
    plan: plan ? plan.label : null,
    plan_active: plan ? plan.active : false,
    quota: {
      daily_limit: plan ? plan.dailyLimit : null,
      used_today: plan ? s.usedToday : 0,
      remaining_today: remainingToday(s),
      overage_today: plan ? s.overageToday : 0,
    },
    per_request_usd: plan ? usdNumber(plan.perRequestMicros) : 0,
    balance_usd: usdNumber(spendableMicros(s)),
    subscription: subscriptionView(s.subscription, now),
  };
}

export const today = (clock: Clock) => utcDay(clock.now());
