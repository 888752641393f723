// CSV exports of the operator's lists (jobs, ledger, audit): RFC 4180 by csv-stringify
// (CRLF records, quotes doubled), a header row, every row the list's filters select (page after
// page, up to EXPORT_MAX_ROWS). Text a merchant or operator wrote is made formula-safe: a cell
// that a spreadsheet would run as a formula (=, +, -, @, tab, CR first) gets a leading `'`
// (OWASP's advice for CSV injection); numbers and times are written as they are, so `-0.05`
// stays a number.
import { stringify } from 'csv-stringify/sync';

/** Rows in one export, at most; the answer says when more matched (SVC-Export-Truncated). */
export const EXPORT_MAX_ROWS = 100_000;

type Cell = string | number | boolean | null | undefined;
/** A column: its header, its cell, and whether the cell is free text (guarded against formulas). */
export type CsvColumn<T> = readonly [name: string, cell: (row: T) => Cell, kind?: 'text'];

const FORMULA_START = /^[=+\-@\t\r]/;

/** Free text as a spreadsheet may open it: never a formula. */
export const formulaSafe = (text: string): string => (FORMULA_START.test(text) ? `'${text}` : text);

export function toCsv<T>(columns: readonly CsvColumn<T>[], rows: readonly T[]): string {
  const records = rows.map((row) =>
    columns.map(([, cell, kind]) => {
      const v = cell(row);
      if (v === null || v === undefined) return '';
      return kind === 'text' ? formulaSafe(String(v)) : v;
    }),
  );
  return stringify([columns.map(([name]) => name), ...records], {
    record_delimiter: 'windows',
    cast: { boolean: (b) => String(b) },
  });
}

/**
 * Every row of a paged list, page after page, until it ends or EXPORT_MAX_ROWS is reached.
 * `page(cursor)` returns one page and the cursor of the next (null at the end).
 */
export async function allPages<T, C>(
  page: (cursor: C | null) => Promise<{ rows: T[]; next: C | null }>,
  max = EXPORT_MAX_ROWS,
): Promise<{ rows: T[]; truncated: boolean }> {
  const rows: T[] = [];
  let cursor: C | null = null;
  for (;;) {
    const p = await page(cursor);
    rows.push(...p.rows);
    if (rows.length >= max)
      return { rows: rows.slice(0, max), truncated: rows.length > max || p.next !== null };
    if (p.next === null) return { rows, truncated: false };
    cursor = p.next;
  }
}
