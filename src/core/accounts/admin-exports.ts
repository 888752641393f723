// The jobs list and a wallet ledger as CSV: the same rows, filters and order (newest
// first) as the JSON lists in admin-lists.ts, every page at once (core/csv-export.ts).
import type { Queryable } from '../../db/database.ts';
import { allPages, type CsvColumn, toCsv } from '../csv-export.ts';
import { decodeCursor } from '../cursor.ts';
import type { Mode } from '../vocabulary.ts';
import { type JobFilter, ledgerPage, listJobs } from './admin-lists.ts';

const PAGE = 500;

type Job = Awaited<ReturnType<typeof listJobs>>['jobs'][number];
const JOB_COLUMNS: CsvColumn<Job>[] = [
  ['job_id', (j) => j.job_id],
  ['created_at', (j) => j.created_at],
  ['finished_at', (j) => j.finished_at],
  ['customer_id', (j) => j.customer_id],
  ['customer_name', (j) => j.customer_name, 'text'],
  ['mode', (j) => j.mode],
  ['async', (j) => j.async],
  ['status', (j) => j.status],
  ['source', (j) => j.source],
  ['player_id', (j) => j.player_id, 'text'],
  ['reference', (j) => j.reference, 'text'],
  ['codes', (j) => j.codes],
  ['done', (j) => j.done],
  ['billed_requests', (j) => j.billed_requests],
  ['refunded_requests', (j) => j.refunded_requests],
  ['activated', (j) => j.outcomes.activated],
  ['billed_failures', (j) => j.outcomes.billed_failures],
  ['refunded', (j) => j.outcomes.refunded],
  ['quarantined', (j) => j.outcomes.quarantined],
  ['attention', (j) => j.attention],
];

export async function jobsCsv(q: Queryable, f: Omit<JobFilter, 'after' | 'limit'>) {
  const { rows, truncated } = await allPages<Job, { createdAt: Date; id: string }>(async (after) => {
    const page = await listJobs(q, { ...f, after: after ?? undefined, limit: PAGE });
    const parts = page.next_cursor ? decodeCursor(page.next_cursor) : null;
    return {
      rows: page.jobs,
      next: parts ? { createdAt: new Date(String(parts[0])), id: String(parts[1]) } : null,
    };
  });
  return { csv: toCsv(JOB_COLUMNS, rows), truncated };
}

type Entry = Awaited<ReturnType<typeof ledgerPage>>['entries'][number];
const LEDGER_COLUMNS: CsvColumn<Entry>[] = [
  ['entry_id', (e) => e.entry_id],
  ['at', (e) => e.at],
  ['kind', (e) => e.kind],
  ['amount_usd', (e) => e.amount_usd],
  ['balance_after_usd', (e) => e.balance_after_usd],
  ['actor', (e) => e.actor, 'text'],
  ['request_id', (e) => e.request_id],
  ['note', (e) => e.note, 'text'],
  ['reference', (e) => e.reference, 'text'],
];

export async function ledgerCsv(q: Queryable, customerId: number, mode: Mode) {
  const { rows, truncated } = await allPages<Entry, number>(async (beforeId) => {
    const page = await ledgerPage(q, customerId, mode, { beforeId: beforeId ?? undefined, limit: PAGE });
    return { rows: page.entries, next: page.next_cursor ? (page.entries.at(-1)?.entry_id ?? null) : null };
  });
  return { csv: toCsv(LEDGER_COLUMNS, rows), truncated };
}
