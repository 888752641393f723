// The request log's table (issue 36): every statement on `request_log` and its daily counts
// `request_log_days`, the query handle first. Rows are written in batches by log-writer.ts, read
// by the operator (GET /admin/v1/requests, the console, the CLI) and deleted by the sweeper.
import type { Queryable } from '../../db/database.ts';
import { isoUtc } from '../clock.ts';
import { encodeCursor } from '../cursor.ts';
import type { Mode } from '../vocabulary.ts';

/** One refused or failed answer of the public API: what the request was, never what it carried. */
export interface RequestLogEntry {
  at: Date;
  /** The key's customer; null when no key was identified (none, malformed, unknown). */
  customerId: number | null;
  keyPrefix: string | null;
  mode: Mode | null;
  method: string;
  /** The path without its query string. */
  path: string;
  status: number;
  errorCode: string | null;
  requestId: string;
  ip: string;
  durationMs: number;
}

/** Caps of rows kept per UTC day: per customer, and for all unidentified callers together. */
export interface RequestLogCaps {
  perCustomer: number;
  unidentified: number;
}

/** The subject a row is counted against: its customer, or `-` for every unidentified caller. */
export const subjectOf = (customerId: number | null) => (customerId === null ? '-' : String(customerId));
export const utcDay = (at: Date) => at.toISOString().slice(0, 10);
export const capOf = (caps: RequestLogCaps, subject: string) =>
  subject === '-' ? caps.unidentified : caps.perCustomer;

/**
 * Writes a batch within the daily caps, in one transaction of two statements: the day's count of
 * each subject is raised by the batch's rows (the upsert locks the count's row, so processes
 * writing at once each see the others' rows), and only the rows still under the cap are inserted
 * (the batch's first ones, in order). Returns the rows written and the rows the cap refused.
 */
export async function writeRequestLogBatch(
  q: Queryable,
  entries: readonly RequestLogEntry[],
  caps: RequestLogCaps,
): Promise<{ written: number; capped: number }> {
  if (entries.length === 0) return { written: 0, capped: 0 };
  const groups = new Map<string, { subject: string; day: string; rows: RequestLogEntry[] }>();
  for (const e of entries) {
    const subject = subjectOf(e.customerId);
    const day = utcDay(e.at);
    const key = `${subject}|${day}`;
    const g = groups.get(key) ?? { subject, day, rows: [] };
    g.rows.push(e);
    groups.set(key, g);
  }
  // In one order in every process: two batches locking the same days' counts cannot deadlock.
  const list = [...groups.values()].sort((a, b) =>
    a.subject === b.subject ? a.day.localeCompare(b.day) : a.subject.localeCompare(b.subject),
  );
  const counted = await q.query<{ subject: string; day: string; seen: number }>(
    `insert into request_log_days as d (subject, day, seen)
     select * from unnest($1::text[], $2::date[], $3::int[])
     on conflict (subject, day) do update set seen = d.seen + excluded.seen
     returning subject, to_char(day, 'YYYY-MM-DD') as day, seen`,
    [list.map((g) => g.subject), list.map((g) => g.day), list.map((g) => g.rows.length)],
  );
  const seenAfter = new Map(counted.rows.map((r) => [`${r.subject}|${r.day}`, Number(r.seen)]));
  const kept: RequestLogEntry[] = [];
  for (const [key, g] of groups) {
    const before = (seenAfter.get(key) ?? g.rows.length) - g.rows.length;
    const room = Math.max(0, capOf(caps, g.subject) - before);
    kept.push(...g.rows.slice(0, room));
  }
  if (kept.length > 0) {
    await q.query(
      `insert into request_log (at, customer_id, key_prefix, mode, method, path, status, error_code,
                                request_id, ip, duration_ms)
       select * from unnest($1::timestamptz[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[],
                            $7::int[], $8::text[], $9::text[], $10::text[], $11::int[])`,
      [
        kept.map((e) => e.at),
        kept.map((e) => e.customerId),
        kept.map((e) => e.keyPrefix),
        kept.map((e) => e.mode),
        kept.map((e) => e.method),
        kept.map((e) => e.path),
        kept.map((e) => e.status),
        kept.map((e) => e.errorCode),
        kept.map((e) => e.requestId),
        kept.map((e) => e.ip),
        kept.map((e) => e.durationMs),
      ],
    );
  }
  return { written: kept.length, capped: entries.length - kept.length };
}

export interface RequestLogFilter {
  customerId?: number | undefined;
  /** An exact status, or a class: 4 for 4xx, 5 for 5xx. */
  status?: { exact: number } | { class: 4 | 5 } | undefined;
  errorCode?: string | undefined;
  requestId?: string | undefined;
  since?: Date | undefined;
  /** Continue after this row (at, id), newest first. */
  after?: { at: Date; id: number } | undefined;
  limit: number;
}

/** One page of the log, newest first. */
export async function listRequestLog(q: Queryable, f: RequestLogFilter) {
  const exact = f.status && 'exact' in f.status ? f.status.exact : null;
  const cls = f.status && 'class' in f.status ? f.status.class : null;
  const r = await q.query<{
    id: number;
    at: Date;
    customerId: number | null;
    customerName: string | null;
    keyPrefix: string | null;
    mode: Mode | null;
    method: string;
    path: string;
    status: number;
    errorCode: string | null;
    requestId: string;
    ip: string;
    durationMs: number;
  }>(
    `select l.id, l.at, l.customer_id as "customerId", c.name as "customerName", l.key_prefix as "keyPrefix",
            l.mode, l.method, l.path, l.status, l.error_code as "errorCode", l.request_id as "requestId",
            l.ip, l.duration_ms as "durationMs"
       from request_log l left join customers c on c.id = l.customer_id
      where ($1::bigint is null or l.customer_id = $1)
        and ($2::int is null or l.status = $2)
        and ($3::int is null or l.status / 100 = $3)
        and ($4::text is null or l.error_code = $4)
        and ($5::text is null or l.request_id = $5)
        and ($6::timestamptz is null or l.at >= $6)
        and ($7::timestamptz is null or (l.at, l.id) < ($7, $8::bigint))
      order by l.at desc, l.id desc limit $9`,
    [
      f.customerId ?? null,
      exact,
      cls,
      f.errorCode ?? null,
      f.requestId ?? null,
      f.since ?? null,
      f.after?.at ?? null,
      f.after?.id ?? null,
      f.limit + 1,
    ],
  );
  const rows = r.rows.slice(0, f.limit);
  const last = rows.at(-1);
  return {
    requests: rows.map((e) => ({
      at: isoUtc(e.at),
      customer_id: e.customerId === null ? null : Number(e.customerId),
      customer_name: e.customerName,
      key_prefix: e.keyPrefix,
      mode: e.mode,
      method: e.method,
      path: e.path,
      status: e.status,
      error_code: e.errorCode,
      request_id: e.requestId,
      ip: e.ip,
      duration_ms: e.durationMs,
    })),
    next_cursor:
      r.rows.length > f.limit && last ? encodeCursor([last.at.toISOString(), Number(last.id)]) : null,
  };
}

/** The rows of one request id (at most a few: ids are unique per answer). */
export async function requestLogRowsOf(q: Queryable, requestId: string) {
  return (await listRequestLog(q, { requestId, limit: 5 })).requests;
}

/**
 * Deletes rows older than `days` and the daily counts of days before that, at most `batch` rows
 * per statement and `maxBatches` statements per call (the next sweep goes on where it stopped).
 */
export async function sweepRequestLog(
  q: Queryable,
  now: Date,
  days: number,
  opts: { batch?: number; maxBatches?: number } = {},
): Promise<{ rows: number; days: number }> {
  const cutoff = new Date(now.getTime() - days * 86_400_000);
  const batch = opts.batch ?? 5000;
  let rows = 0;
  for (let i = 0; i < (opts.maxBatches ?? 20); i++) {
    const r = await q.query(
      `delete from request_log where id in (select id from request_log where at < $1 order by at limit $2)`,
      [cutoff, batch],
    );
    rows += r.rowCount;
    if (r.rowCount < batch) break;
  }
  const d = await q.query('delete from request_log_days where day < $1::date', [utcDay(cutoff)]);
  return { rows, days: d.rowCount };
}
