// The request log's table: every statement on `request_log` and its daily counts
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
  /** The client's address; `unknown` when its socket was gone before the answer was logged. */
  ip: string;
  durationMs: number;
  /** The key that sent it, when identified (its label is read from the key). */
  keyId?: string | null;
  /** A redeem's player id, when it had a valid one. */
  playerId?: string | null;
  /** The job a redeem created. */
  jobId?: string | null;
  /** A redeem's codes by outcome status, only the non-zero counts (`{"bad_player": 1}`). */
  outcomes?: Record<string, number> | null;
  /** The error body's message, caller text in it masked. */
  message?: string | null;
}

/** Caps of rows kept per UTC day: per customer, and for all unidentified callers together. */
export interface RequestLogCaps {
  perCustomer: number;
  unidentified: number;
}

/**
 * The subject a row is counted against: its customer, or for every unidentified caller together
 * `-` and the UTC hour (`-09`). The unidentified callers' daily cap is spent an hour at a time
 * (a 24th of it each hour), so a flood in the morning cannot use up the day and leave a later
 * attack unlogged: each hour of a flood is sampled, the rest counted.
 */
export const subjectOf = (customerId: number | null, at: Date) =>
  customerId === null ? `-${at.toISOString().slice(11, 13)}` : String(customerId);
export const isUnidentified = (subject: string) => subject.startsWith('-');
export const utcDay = (at: Date) => at.toISOString().slice(0, 10);
export const capOf = (caps: RequestLogCaps, subject: string) =>
  isUnidentified(subject) ? Math.ceil(caps.unidentified / 24) : caps.perCustomer;

const MODES = new Set(['live', 'test']);
const text = (v: unknown, max: number, fallback: string) =>
  typeof v === 'string' && v.length > 0 ? v.slice(0, max) : fallback;
const optionalText = (v: unknown, max: number) =>
  typeof v === 'string' && v.length > 0 ? v.slice(0, max) : null;
const int = (v: unknown, fallback: number) =>
  typeof v === 'number' && Number.isFinite(v)
    ? Math.max(-2_147_483_648, Math.min(2_147_483_647, Math.round(v)))
    : fallback;

/**
 * The entry with a value for every column the table requires: a row missing one (the address of
 * a request whose socket was already gone) would otherwise fail the insert of its whole batch.
 */
export function completeEntry(e: RequestLogEntry): RequestLogEntry {
  const at = e.at instanceof Date && !Number.isNaN(e.at.getTime()) ? e.at : new Date();
  const customerId = Number.isSafeInteger(e.customerId) ? e.customerId : null;
  return {
    at,
    customerId,
    keyPrefix: optionalText(e.keyPrefix, 32),
    mode: e.mode !== null && MODES.has(e.mode) ? e.mode : null,
    method: text(e.method, 16, '-'),
    path: text(e.path, 200, '/'),
    status: int(e.status, 0),
    errorCode: optionalText(e.errorCode, 64),
    requestId: text(e.requestId, 100, '-'),
    ip: text(e.ip, 64, 'unknown'),
    durationMs: Math.max(0, int(e.durationMs, 0)),
    keyId: optionalText(e.keyId, 64),
    playerId: optionalText(e.playerId, 20),
    jobId: optionalText(e.jobId, 64),
    outcomes: e.outcomes && Object.keys(e.outcomes).length > 0 ? e.outcomes : null,
    message: optionalText(e.message, 300),
  };
}

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
    const subject = subjectOf(e.customerId, e.at);
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
                                request_id, ip, duration_ms, key_id, player_id, job_id, outcomes, message)
       select at, customer_id, key_prefix, mode, method, path, status, error_code, request_id, ip,
              duration_ms, key_id, player_id, job_id, outcomes::jsonb, message
         from unnest($1::timestamptz[], $2::bigint[], $3::text[], $4::text[], $5::text[], $6::text[],
                     $7::int[], $8::text[], $9::text[], $10::text[], $11::int[], $12::text[], $13::text[],
                     $14::text[], $15::text[], $16::text[])
           as r(at, customer_id, key_prefix, mode, method, path, status, error_code, request_id, ip,
                duration_ms, key_id, player_id, job_id, outcomes, message)`,
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
        kept.map((e) => e.keyId ?? null),
        kept.map((e) => e.playerId ?? null),
        kept.map((e) => e.jobId ?? null),
        kept.map((e) => (e.outcomes ? JSON.stringify(e.outcomes) : null)),
        kept.map((e) => e.message ?? null),
      ],
    );
  }
  return { written: kept.length, capped: entries.length - kept.length };
}

export interface RequestLogFilter {
  customerId?: number | undefined;
  /** Customers of this name (case does not matter). */
  customerName?: string | undefined;
  /** An exact status, or a class: 4 for 4xx, 5 for 5xx. */
  status?: { exact: number } | { class: 4 | 5 } | undefined;
  errorCode?: string | undefined;
  /** Rows of this mode (rows of unidentified callers have none). */
  mode?: Mode | undefined;
  requestId?: string | undefined;
  playerId?: string | undefined;
  since?: Date | undefined;
  /** Rows before this instant (the end of a day asked for). */
  before?: Date | undefined;
  /** Continue after this row (at, id), newest first. */
  after?: { at: Date; id: number } | undefined;
  limit: number;
}

/** The filter's conditions (every one optional), its parameters $1 to $10. */
const WHERE = `($1::bigint is null or l.customer_id = $1)
        and ($2::int is null or l.status = $2)
        and ($3::int is null or l.status / 100 = $3)
        and ($4::text is null or l.error_code = $4)
        and ($5::text is null or l.request_id = $5)
        and ($6::timestamptz is null or l.at >= $6)
        and ($7::timestamptz is null or l.at < $7)
        and ($8::text is null or l.player_id = $8)
        and ($9::text is null or l.customer_id in (select id from customers where lower(name) = lower($9)))
        and ($10::text is null or l.mode = $10)`;

function whereParams(f: RequestLogFilter) {
  return [
    f.customerId ?? null,
    f.status && 'exact' in f.status ? f.status.exact : null,
    f.status && 'class' in f.status ? f.status.class : null,
    f.errorCode ?? null,
    f.requestId ?? null,
    f.since ?? null,
    f.before ?? null,
    f.playerId ?? null,
    f.customerName ?? null,
    f.mode ?? null,
  ];
}

/** Rows counted by error code at most: a count over a day of a flood stays a bounded read. */
const MAX_COUNTED = 100_000;

/**
 * The rows matching the filter counted by error code, most first (`null` for answers without one:
 * a redeem whose codes all failed answers 422 with its outcomes instead): the list's summary, over
 * the same filter without its page.
 */
export async function countRequestLog(q: Queryable, f: RequestLogFilter) {
  const r = await q.query<{ errorCode: string | null; n: number }>(
    `select error_code as "errorCode", count(*)::int as n
       from (select l.error_code from request_log l where ${WHERE} limit ${MAX_COUNTED}) l
      group by error_code order by n desc, error_code`,
    whereParams(f),
  );
  const byCode = r.rows.map((row) => ({ error_code: row.errorCode, count: Number(row.n) }));
  const total = byCode.reduce((sum, c) => sum + c.count, 0);
  return { total, by_error_code: byCode, complete: total < MAX_COUNTED };
}

/** One page of the log, newest first. */
export async function listRequestLog(q: Queryable, f: RequestLogFilter) {
  const r = await q.query<{
    id: number;
    at: Date;
    customerId: number | null;
    customerName: string | null;
    keyPrefix: string | null;
    keyLabel: string | null;
    mode: Mode | null;
    method: string;
    path: string;
    status: number;
    errorCode: string | null;
    message: string | null;
    requestId: string;
    ip: string;
    durationMs: number;
    playerId: string | null;
    jobId: string | null;
    outcomes: Record<string, number> | string | null;
  }>(
    `select l.id, l.at, l.customer_id as "customerId", c.name as "customerName", l.key_prefix as "keyPrefix",
            k.label as "keyLabel", l.mode, l.method, l.path, l.status, l.error_code as "errorCode",
            l.message, l.request_id as "requestId", l.ip, l.duration_ms as "durationMs",
            l.player_id as "playerId", l.job_id as "jobId", l.outcomes
       from request_log l
       left join customers c on c.id = l.customer_id
       left join api_keys k on k.id = l.key_id and k.customer_id = l.customer_id
      where ${WHERE}
        and ($11::timestamptz is null or (l.at, l.id) < ($11, $12::bigint))
      order by l.at desc, l.id desc limit $13`,
    [...whereParams(f), f.after?.at ?? null, f.after?.id ?? null, f.limit + 1],
  );
  const rows = r.rows.slice(0, f.limit);
  const last = rows.at(-1);
  return {
    requests: rows.map((e) => ({
      at: isoUtc(e.at),
      customer_id: e.customerId === null ? null : Number(e.customerId),
      customer_name: e.customerName,
      key_prefix: e.keyPrefix,
      key_label: e.keyLabel,
      mode: e.mode,
      method: e.method,
      path: e.path,
      status: e.status,
      error_code: e.errorCode,
      message: e.message,
      request_id: e.requestId,
      ip: e.ip,
      duration_ms: e.durationMs,
      player_id: e.playerId,
      job_id: e.jobId,
      outcomes:
        typeof e.outcomes === 'string' ? (JSON.parse(e.outcomes) as Record<string, number>) : e.outcomes,
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

/**
 * The public API's refusals of today (UTC) by error code, most first, of one mode or both: the
 * overview's section (the request log's counts for `day=today`).
 */
export async function refusalsToday(q: Queryable, now: Date, mode: Mode | null) {
  const day = utcDay(now);
  const since = new Date(`${day}T00:00:00Z`);
  const counts = await countRequestLog(q, {
    mode: mode ?? undefined,
    since,
    before: new Date(since.getTime() + 86_400_000),
    limit: 0,
  });
  return { day, ...counts };
}
