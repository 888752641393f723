// The audit log as CSV: the same events, filters and order (newest first) as
// GET /admin/v1/audit, every page at once; `details` as its JSON text.
import type { Queryable } from '../../db/database.ts';
import { allPages, type CsvColumn, toCsv } from '../csv-export.ts';
import { decodeCursor } from '../cursor.ts';
import { type AuditFilter, auditPage } from './audit.ts';

type Event = Awaited<ReturnType<typeof auditPage>>['events'][number];
const COLUMNS: CsvColumn<Event>[] = [
  ['id', (e) => e.id],
  ['at', (e) => e.at],
  ['actor', (e) => e.actor, 'text'],
  ['action', (e) => e.action],
  ['customer_id', (e) => e.customer_id],
  ['target', (e) => e.target, 'text'],
  ['request_id', (e) => e.request_id],
  ['ip', (e) => e.ip],
  ['details', (e) => JSON.stringify(e.details), 'text'],
];

export async function auditCsv(q: Queryable, f: Omit<AuditFilter, 'beforeSeq' | 'limit'>) {
  const { rows, truncated } = await allPages<Event, number>(async (beforeSeq) => {
    const page = await auditPage(q, { ...f, beforeSeq: beforeSeq ?? undefined, limit: 500 });
    const parts = page.next_cursor ? decodeCursor(page.next_cursor) : null;
    return { rows: page.events, next: parts ? Number(parts[0]) : null };
  });
  return { csv: toCsv(COLUMNS, rows), truncated };
}
