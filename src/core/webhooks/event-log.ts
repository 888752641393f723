// The webhook event log (docs/reference/webhooks-and-events.md#the-event-log): a customer's events newest first with their attempts,
// for the merchant (its key's customer and mode) and the operator. An event's state comes from
// its automatic schedule and its redeliveries, and is kept in webhook_events.log_state by
// triggers in the transaction of each change (webhook_event_log_state in
// src/db/functions/webhooks.sql; migration 0081), so a list filtered by state is an index range
// that stops at its limit, as an unfiltered one is:
//   pending   an automatic attempt is still due, or a redelivery is queued or in flight;
//   delivered an attempt (automatic or redelivery) got a 2xx;
//   failed    every automatic attempt used (dropped) and no attempt got a 2xx.
// Paging is by keyset on (created_at, id), newest first: events written while a client pages
// are newer than its cursor, so they never shift a later page (no gaps, no repeats).
import type { Queryable } from '../../db/database.ts';
import { isoUtc } from '../clock.ts';
import { encodeCursor } from '../cursor.ts';
import { jobEventData } from '../redeem/job-view.ts';
import type { EventState, JobEvent, Mode } from '../vocabulary.ts';
import { type AttemptErrorClass, attemptErrorClass } from './attempt-errors.ts';

/** The list's filters by type and by job id (the route checks them; the OpenAPI document says them). */
export const EVENT_TYPE_FORMAT = /^[a-z][a-z0-9._]{0,63}$/;
export const EVENT_JOB_ID_FORMAT = /^job_[A-Za-z0-9]{20,64}$/;

export interface EventFilter {
  /** The event's customer; a merchant's key always names one, the operator's list may not (null: every customer). */
  customerId: number | null;
  /** The key's mode; the operator may leave it out (both modes). */
  mode: Mode | null;
  state?: EventState | undefined;
  type?: string | undefined;
  jobId?: string | undefined;
  cursor?: EventCursor | undefined;
  limit: number;
}

export interface EventCursor {
  createdAt: Date;
  id: string;
}

export interface EventAttempt {
  at: string;
  status: number | null;
  error: AttemptErrorClass | null;
  duration_ms: number;
  redelivery: boolean;
}

export interface EventRecord {
  id: string;
  event: string;
  job_id: string;
  mode: Mode;
  created_at: string;
  state: EventState;
  next_attempt_at: string | null;
  attempts: EventAttempt[];
}

interface EventRow {
  id: string;
  customerId: number;
  event: JobEvent;
  jobId: string;
  mode: Mode;
  createdAt: Date;
  state: EventState;
  nextAttemptAt: Date | null;
}

// Events with their state; `page` is the events' own query (its conditions, order and limit).
// The next attempt of one whose schedule ended is its queued redelivery's, read by
// withNextAttempts for the page's events only (a second statement: on Citus a page across
// customers cannot carry a subquery per row).
const eventsOf = (page: string) => `
  select e.id, e.customer_id as "customerId", e.event, e.job_id as "jobId", e.mode, e.created_at as "createdAt", e.log_state as state,
         e.state = 'pending' as scheduled, case when e.state = 'pending' then e.next_attempt_at end as "nextAttemptAt"
    from (${page}) e`;

/** Each unscheduled event's next attempt: the request time of its queued redelivery, if any. */
async function withNextAttempts(
  q: Queryable,
  rows: (EventRow & { scheduled: boolean })[],
): Promise<EventRow[]> {
  const ids = rows.filter((e) => !e.scheduled).map((e) => e.id);
  const queued = new Map<string, Date>();
  if (ids.length > 0) {
    const r = await q.query<{ eventId: string; at: Date }>(
      `select event_id as "eventId", min(requested_at) as at from webhook_redeliveries
        where event_id = any($1::text[]) and state = 'queued' group by event_id`,
      [ids],
      'webhook_redeliveries_queued',
    );
    for (const x of r.rows) queued.set(x.eventId, x.at);
  }
  return rows.map(({ scheduled, ...e }) =>
    scheduled ? e : { ...e, nextAttemptAt: queued.get(e.id) ?? null },
  );
}

/** A page of events, newest first, with `next_cursor` when more follow. */
export async function listEvents(q: Queryable, f: EventFilter) {
  // Only the filters given are in the statement (one prepared statement per combination), so
  // each has a plan of its own: an index range on (customer, mode[, state], created_at, id).
  const params: unknown[] = [];
  const where: string[] = [];
  const add = (sql: (n: string) => string, value: unknown) => {
    params.push(value);
    where.push(sql(`$${params.length}`));
  };
  if (f.customerId !== null) add((n) => `customer_id = ${n}`, f.customerId);
  if (f.mode !== null) add((n) => `mode = ${n}`, f.mode);
  if (f.state) add((n) => `log_state = ${n}`, f.state);
  if (f.type) add((n) => `event = ${n}`, f.type);
  if (f.jobId) add((n) => `job_id = ${n}`, f.jobId);
  if (f.cursor) {
    params.push(f.cursor.createdAt, f.cursor.id);
    where.push(`(created_at, id) < ($${params.length - 1}::timestamptz, $${params.length}::text)`);
  }
  params.push(f.limit + 1);
  const page = `select * from webhook_events ${where.length ? `where ${where.join(' and ')}` : ''}
     order by created_at desc, id desc limit $${params.length}`;
  const name = `webhook_events_list_${[
    f.customerId !== null,
    f.mode !== null,
    f.state,
    f.type,
    f.jobId,
    f.cursor,
  ]
    .map((given) => (given ? 1 : 0))
    .join('')}`;
  const r = await q.query<EventRow & { scheduled: boolean }>(
    `${eventsOf(page)} order by e.created_at desc, e.id desc`,
    params,
    name,
  );
  const rows = await withNextAttempts(q, r.rows.slice(0, f.limit));
  const attempts = await loadAttempts(
    q,
    rows.map((e) => e.id),
  );
  const last = rows.at(-1);
  return {
    events: rows.map((e) => eventRecord(e, attempts.get(e.id) ?? [])),
    next_cursor:
      r.rows.length > f.limit && last
        ? encodeCursor([new Date(last.createdAt).toISOString(), last.id])
        : null,
  };
}

/** One event with its payload's `data`, or null when unknown or not the owner's. */
export async function getEvent(
  q: Queryable,
  codeKey: Buffer,
  owner: { customerId: number; mode: Mode } | null,
  eventId: string,
) {
  if (!/^evt_[A-Za-z0-9]{20,64}$/.test(eventId)) return null;
  // The operator reads any event: its customer comes from the row itself. A merchant's is named
  // by its customer in the statement's text (on Citus: its worker alone; Citus does not prune on
  // `$1 is null or customer_id = $1`).
  const r = owner
    ? await q.query<EventRow & { scheduled: boolean }>(
        eventsOf('select * from webhook_events where customer_id = $1 and mode = $2 and id = $3'),
        [owner.customerId, owner.mode, eventId],
        'webhook_event_get',
      )
    : await q.query<EventRow & { scheduled: boolean }>(
        eventsOf('select * from webhook_events where id = $1'),
        [eventId],
        'webhook_event_get_any',
      );
  const found = r.rows[0];
  if (!found) return null;
  const [row] = (await withNextAttempts(q, [found])) as [EventRow];
  const attempts = await loadAttempts(q, [row.id]);
  const data = await jobEventData(q, codeKey, { customerId: found.customerId, id: row.jobId }, row.event);
  return { ...eventRecord(row, attempts.get(row.id) ?? []), data: data ?? {} };
}

/** A decoded cursor's parts as an event cursor, or null when they are not one of ours. */
export function parseEventCursor(p: unknown[]): EventCursor | null {
  if (p.length !== 2 || typeof p[0] !== 'string' || typeof p[1] !== 'string') return null;
  const createdAt = new Date(p[0]);
  if (Number.isNaN(createdAt.getTime()) || !/^evt_[A-Za-z0-9]{20,64}$/.test(p[1])) return null;
  return { createdAt, id: p[1] };
}

function eventRecord(e: EventRow, attempts: EventAttempt[]): EventRecord {
  return {
    id: e.id,
    event: e.event,
    job_id: e.jobId,
    mode: e.mode,
    created_at: isoUtc(new Date(e.createdAt)),
    state: e.state,
    next_attempt_at: e.nextAttemptAt === null ? null : isoUtc(new Date(e.nextAttemptAt)),
    attempts,
  };
}

/** The finished attempts of some events, automatic and redeliveries, oldest first. */
async function loadAttempts(q: Queryable, ids: string[]): Promise<Map<string, EventAttempt[]>> {
  const out = new Map<string, EventAttempt[]>();
  if (ids.length === 0) return out;
  const r = await q.query<{
    eventId: string;
    at: Date;
    status: number | null;
    error: string | null;
    errorClass: AttemptErrorClass | null;
    durationMs: number;
    redelivery: boolean;
  }>(
    `select event_id as "eventId", started_at as at, status, error, error_class as "errorClass",
            duration_ms as "durationMs", false as redelivery
       from webhook_attempts where event_id = any($1::text[])
     union all
     select event_id, started_at, status, error, error_class, duration_ms, true
       from webhook_redeliveries where event_id = any($1::text[]) and state = 'done'
     order by 2, 7`,
    [ids],
    'webhook_attempts_list',
  );
  for (const a of r.rows) {
    const list = out.get(a.eventId) ?? [];
    list.push({
      at: isoUtc(new Date(a.at)),
      status: a.status,
      // Rows from before the class was stored (migration 0030) get it from what they recorded.
      error: a.errorClass ?? attemptErrorClass(a.status, a.error),
      duration_ms: a.durationMs,
      redelivery: a.redelivery,
    });
    out.set(a.eventId, list);
  }
  return out;
}
