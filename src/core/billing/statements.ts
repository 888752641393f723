// Statements (docs/reference/statements.md#the-request): per UTC day of a range, the requests billed from the include and
// from the wallet, the outcomes, and the money, for one customer and mode. Derived, never kept
// as a second total: money from the wallet ledger (append-only), counts from the usage counters
// (daily_usage: requests held or billed by the day they were held; the usage rollup and job rows:
// outcomes by the day they were known). Each day's closing is its opening plus that day's ledger
// entries, and the first opening is the sum of every earlier entry, so
// `closing = opening + topups + adjustments - charged` holds to the micro-dollar by construction,
// days chain, and a statement ending today closes at the ledger balance (the settled balance:
// holds are not ledger entries).
import type { Queryable } from '../../db/database.ts';
import { OUTCOMES, usageBuckets } from '../accounts/usage.ts';
import { utcDay } from '../clock.ts';
import { ApiError } from '../errors.ts';
import { usdNumber } from '../money.ts';
import type { Mode } from '../vocabulary.ts';

/** The longest range one statement covers, in days (both ends included). */
export const MAX_STATEMENT_DAYS = 366;
/** Days in a statement when the caller names no `from`. */
export const DEFAULT_STATEMENT_DAYS = 30;
const DAY_MS = 86_400_000;
/** The days a statement may name (`to=9999-12-31` was a 500). */
const FIRST_DAY = '2000-01-01';
const LAST_DAY = '9999-12-31';

export interface StatementCounts {
  requests_included: number;
  requests_overage: number;
  requests_refunded: number;
  codes: Record<(typeof OUTCOMES)[number], number>;
}

/** Money in micro-dollars (exact); shown as USD numbers by statementView. */
export interface StatementDayMicros extends StatementCounts {
  date: string;
  charged: number;
  topups: number;
  adjustments: number;
  opening: number;
  closing: number;
}

/** The range of a request: both days as YYYY-MM-DD, checked; the defaults end today (UTC). */
export function statementRange(now: Date, from: string | undefined, to: string | undefined) {
  const parse = (name: string, raw: string) => {
    const d = /^\d{4}-\d{2}-\d{2}$/.test(raw) ? new Date(`${raw}T00:00:00Z`) : null;
    // A day that does not exist (2026-02-30) comes back as another day.
    if (!d || Number.isNaN(d.getTime()) || utcDay(d) !== raw)
      throw new ApiError('bad_request', `${name}: must be a date YYYY-MM-DD`);
    // Years with four digits, from the first the service could have records of: every day of
    // the range, and the day after it, stays a plain YYYY-MM-DD and a PostgreSQL date.
    if (raw < FIRST_DAY || raw > LAST_DAY)
      throw new ApiError('bad_request', `${name}: must be a day of the years 2000 to 9999`);
    return d;
  };
  const end = to === undefined ? new Date(`${utcDay(now)}T00:00:00Z`) : parse('to', to);
  const start =
    from === undefined
      ? new Date(end.getTime() - (DEFAULT_STATEMENT_DAYS - 1) * DAY_MS)
      : parse('from', from);
  if (start.getTime() > end.getTime()) throw new ApiError('bad_request', 'from: must not be after to');
  const days = (end.getTime() - start.getTime()) / DAY_MS + 1;
  if (days > MAX_STATEMENT_DAYS)
    throw new ApiError('bad_request', `from: a statement covers at most ${MAX_STATEMENT_DAYS} days`);
  return { start, end, days };
}

const zeroCodes = () => Object.fromEntries(OUTCOMES.map((o) => [o, 0])) as StatementCounts['codes'];

/** The statement's days, oldest first, every day of the range present; money in micro-dollars. */
export async function statementDays(
  q: Queryable,
  owner: { customerId: number; mode: Mode },
  range: { start: Date; end: Date; days: number },
): Promise<StatementDayMicros[]> {
  const after = new Date(range.end.getTime() + DAY_MS);
  const params = [owner.customerId, owner.mode, range.start, after];
  // Ledger kinds written today are topup, adjustment and charge (redeems and quarantine
  // settlements); refund and settlement are reserved names. Charges, refunds and settlements are the
  // wallet's charges net; topups are topups; every other kind, known now or added later, counts
  // as an adjustment, so a new kind can never make a day stop reconciling.
  const [opening, ledger, usage, rollup] = await Promise.all([
    q.query<{ opening: number }>(
      `select coalesce(sum(amount_micros), 0)::int8 as opening from wallet_ledger
        where customer_id = $1 and mode = $2 and created_at < $3`,
      params.slice(0, 3),
      'statement_opening',
    ),
    q.query<{ day: string; topups: number; charged: number; adjustments: number }>(
      `select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day,
              coalesce(sum(amount_micros) filter (where kind = 'topup'), 0)::int8 as topups,
              (-coalesce(sum(amount_micros) filter (where kind in ('charge', 'refund', 'settlement')), 0))::int8 as charged,
              coalesce(sum(amount_micros) filter (where kind not in ('topup', 'charge', 'refund', 'settlement')), 0)::int8
                as adjustments
         from wallet_ledger
        where customer_id = $1 and mode = $2 and created_at >= $3 and created_at < $4
        group by 1`,
      params,
      'statement_ledger',
    ),
    q.query<{ day: string; used: number; overage: number }>(
      `select to_char(day, 'YYYY-MM-DD') as day, used, overage from daily_usage
        where customer_id = $1 and mode = $2 and day >= $3::date and day <= $4::date`,
      // The last day itself: the day after 9999-12-31 has no YYYY-MM-DD.
      [owner.customerId, owner.mode, utcDay(range.start), utcDay(range.end)],
      'statement_usage',
    ),
    q.query<{ rolledUntil: Date | null }>(
      'select rolled_until as "rolledUntil" from usage_rollup where id = 1',
    ),
  ]);
  // The rollup is read where it stands (advancing it is the operator's reads' work, off this path).
  const outcomes = await usageBuckets(
    q,
    { customerId: owner.customerId, mode: owner.mode, granularity: 'day', from: range.start, to: after },
    rollup.rows[0]?.rolledUntil ?? new Date(0),
  );
  const money = new Map(ledger.rows.map((r) => [r.day, r]));
  const used = new Map(usage.rows.map((r) => [r.day, r]));
  let balance = Number(opening.rows[0]!.opening);
  return outcomes.buckets.map((b) => {
    const date = b.start.slice(0, 10);
    const m = money.get(date);
    const u = used.get(date);
    const [topups, charged, adjustments] = [
      Number(m?.topups ?? 0),
      Number(m?.charged ?? 0),
      Number(m?.adjustments ?? 0),
    ];
    const openingMicros = balance;
    balance = openingMicros + topups + adjustments - charged;
    const codes = zeroCodes();
    for (const o of OUTCOMES) codes[o] = b[o];
    return {
      date,
      requests_included: (u?.used ?? 0) - (u?.overage ?? 0),
      requests_overage: u?.overage ?? 0,
      requests_refunded: b.refunded,
      codes,
      charged,
      topups,
      adjustments,
      opening: openingMicros,
      closing: balance,
    };
  });
}

/** The JSON shape of days and totals (docs/reference/statements.md#the-answer) (money as USD numbers, exact). */
export function statementView(days: StatementDayMicros[]) {
  const money = (
    d: Pick<StatementDayMicros, 'charged' | 'topups' | 'adjustments' | 'opening' | 'closing'>,
  ) => ({
    charged_usd: usdNumber(d.charged),
    topups_usd: usdNumber(d.topups),
    adjustments_usd: usdNumber(d.adjustments),
    opening_balance_usd: usdNumber(d.opening),
    closing_balance_usd: usdNumber(d.closing),
  });
  const counts = (d: StatementCounts) => ({
    requests_included: d.requests_included,
    requests_overage: d.requests_overage,
    requests_refunded: d.requests_refunded,
    codes: { ...d.codes },
  });
  const sum = (
    k: 'requests_included' | 'requests_overage' | 'requests_refunded' | 'charged' | 'topups' | 'adjustments',
  ) => days.reduce((s, d) => s + d[k], 0);
  const codes = zeroCodes();
  for (const d of days) for (const o of OUTCOMES) codes[o] += d.codes[o];
  const totals = {
    requests_included: sum('requests_included'),
    requests_overage: sum('requests_overage'),
    requests_refunded: sum('requests_refunded'),
    codes,
    charged: sum('charged'),
    topups: sum('topups'),
    adjustments: sum('adjustments'),
    opening: days[0]?.opening ?? 0,
    closing: days.at(-1)?.closing ?? 0,
  };
  return {
    days: days.map((d) => ({ date: d.date, ...counts(d), ...money(d) })),
    totals: { ...counts(totals), ...money(totals) },
  };
}

/** The whole statement of one customer and mode for `from`..`to` (defaults as statementRange). */
export async function buildStatement(
  q: Queryable,
  owner: { customerId: number; mode: Mode },
  query: { from?: string | undefined; to?: string | undefined },
  now: Date,
) {
  const range = statementRange(now, query.from, query.to);
  const days = await statementDays(q, owner, range);
  return {
    mode: owner.mode,
    currency: 'USD' as const,
    from: utcDay(range.start),
    to: utcDay(range.end),
    ...statementView(days),
  };
}
