// Money across customers per UTC day (the overview's money plot and its CSV): top-ups,
// charges, refunds and adjustments from the wallet ledger (append-only, so derived, never kept),
// of one mode or both, for a range of days (statementRange's rules: default the 30 days ending
// today, at most 366). Charges count redeems' charges and quarantine settlements as positive
// dollars taken; refunds the money given back; every other kind is an adjustment (signed), as
// statements.ts counts them, so a new kind cannot go missing.
import type { Queryable } from '../../db/database.ts';
import { utcDay } from '../clock.ts';
import { type CsvColumn, toCsv } from '../csv-export.ts';
import { usdNumber } from '../money.ts';
import type { Mode } from '../vocabulary.ts';
import { statementRange } from './statements.ts';

const DAY_MS = 86_400_000;

export interface MoneyDay {
  date: string;
  topups_usd: number;
  charges_usd: number;
  refunds_usd: number;
  adjustments_usd: number;
}

export async function moneyByDay(
  q: Queryable,
  now: Date,
  f: { mode: Mode | null; from?: string | undefined; to?: string | undefined },
) {
  const { start, end, days } = statementRange(now, f.from, f.to);
  const r = await q.query<{
    day: string;
    topups: string;
    charges: string;
    refunds: string;
    adjustments: string;
  }>(
    `select to_char(created_at at time zone 'UTC', 'YYYY-MM-DD') as day,
            coalesce(sum(amount_micros) filter (where kind = 'topup'), 0)::int8 as topups,
            (-coalesce(sum(amount_micros) filter (where kind in ('charge', 'settlement')), 0))::int8 as charges,
            coalesce(sum(amount_micros) filter (where kind = 'refund'), 0)::int8 as refunds,
            coalesce(sum(amount_micros) filter (where kind not in ('topup', 'charge', 'settlement', 'refund')), 0)::int8
              as adjustments
       from wallet_ledger
      where created_at >= $1 and created_at < $2 and ($3::text is null or mode = $3)
      group by 1`,
    [start, new Date(end.getTime() + DAY_MS), f.mode],
  );
  const byDay = new Map(r.rows.map((row) => [row.day, row]));
  const totals = { topups: 0, charges: 0, refunds: 0, adjustments: 0 };
  const list: MoneyDay[] = [];
  for (let i = 0; i < days; i++) {
    const date = utcDay(new Date(start.getTime() + i * DAY_MS));
    const row = byDay.get(date);
    const m = {
      topups: Number(row?.topups ?? 0),
      charges: Number(row?.charges ?? 0),
      refunds: Number(row?.refunds ?? 0),
      adjustments: Number(row?.adjustments ?? 0),
    };
    for (const k of Object.keys(totals) as (keyof typeof totals)[]) totals[k] += m[k];
    list.push({
      date,
      topups_usd: usdNumber(m.topups),
      charges_usd: usdNumber(m.charges),
      refunds_usd: usdNumber(m.refunds),
      adjustments_usd: usdNumber(m.adjustments),
    });
  }
  return {
    mode: f.mode,
    currency: 'USD' as const,
    from: utcDay(start),
    to: utcDay(end),
    days: list,
    totals: {
      topups_usd: usdNumber(totals.topups),
      charges_usd: usdNumber(totals.charges),
      refunds_usd: usdNumber(totals.refunds),
      adjustments_usd: usdNumber(totals.adjustments),
    },
  };
}

const COLUMNS: CsvColumn<MoneyDay>[] = [
  ['date', (d) => d.date],
  ['topups_usd', (d) => d.topups_usd],
  ['charges_usd', (d) => d.charges_usd],
  ['refunds_usd', (d) => d.refunds_usd],
  ['adjustments_usd', (d) => d.adjustments_usd],
];

export const moneyCsv = (days: MoneyDay[]) => toCsv(COLUMNS, days);
