// A statement as CSV (docs/reference/statements.md#csv): RFC 4180, UTF-8, a header row, one row per day, `codes`
// flattened as codes_activated …, money as in docs/reference/keys-and-modes.md#conventions (`12.5`, `0.0035`, `0`).
// Written by csv-stringify (the node-csv project: maintained for a decade, no dependencies,
// RFC 4180 quoting and CRLF records), not by hand: a future text column (a note, a customer
// name) then cannot break the quoting.
import { stringify } from 'csv-stringify/sync';
import { OUTCOMES } from '../accounts/usage.ts';
import type { statementView } from './statements.ts';

export const STATEMENT_CSV_COLUMNS = [
  'date',
  'requests_included',
  'requests_overage',
  'requests_refunded',
  ...OUTCOMES.map((o) => `codes_${o}`),
  'charged_usd',
  'topups_usd',
  'adjustments_usd',
  'opening_balance_usd',
  'closing_balance_usd',
] as const;

type View = ReturnType<typeof statementView>;

export function statementCsv(view: View): string {
  const rows = view.days.map((d) => [
    d.date,
    d.requests_included,
    d.requests_overage,
    d.requests_refunded,
    ...OUTCOMES.map((o) => d.codes[o]),
    // usdNumber's values print as their exact decimal text (at most 6 decimals, never 1e-7).
    d.charged_usd,
    d.topups_usd,
    d.adjustments_usd,
    d.opening_balance_usd,
    d.closing_balance_usd,
  ]);
  return stringify([[...STATEMENT_CSV_COLUMNS], ...rows], { record_delimiter: 'windows' });
}

/** The attachment's file name: statement-<mode>-<from>-<to>.csv. */
export const statementFileName = (mode: string, from: string, to: string) =>
  `statement-${mode}-${from}-${to}.csv`;
