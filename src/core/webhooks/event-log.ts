// The webhook event log (contract 13.6): a customer's events newest first with their attempts,
// for the merchant (its key's customer and mode) and the operator. An event's state is derived
// from the automatic schedule and its redeliveries, never stored twice:
//   pending   an automatic attempt is still due, or a redelivery is queued or in flight;
//   delivered an attempt (automatic or redelivery) got a 2xx;
//   failed    every automatic attempt used (dropped) and no attempt got a 2xx.
// Paging is by keyset on (created_at, id), newest first: events written while a client pages
// are newer than its cursor, so they never shift a later page (no gaps, no repeats).
import type { Queryable } from '../../db/database.ts';
import type { Mode } from '../accounts/accounts.ts';
import { encodeCursor } from '../accounts/admin-lists.ts';
import { isoUtc } from '../clock.ts';
import { type JobEvent, jobEventData } from '../jobs/view.ts';
import { type AttemptErrorClass, attemptErrorClass } from './attempt-errors.ts';

export type EventState = 'pending' | 'delivered' | 'failed';
/** The list's filters by type and by job id (the route checks them; the OpenAPI document says them). */
export const EVENT_TYPE_FORMAT = /^[a-z][a-z0-9._]{0,63}$/;
export const EVENT_JOB_ID_FORMAT = /^job_[A-Za-z0-9]{20,64}$/;
export const EVENT_STATES = ['pending', 'delivered', 'failed'] as const;

export interface EventFilter {
  /** The event's customer; the operator's list names one, a merchant's key always does. */
  customerId: number;
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
  event: JobEvent;
  jobId: string;
  mode: Mode;
  createdAt: Date;
  state: EventState;
  nextAttemptAt: Date | null;
}

// One event with its derived state ($1 customer, $2 mode or null); the caller adds conditions.
const EVENT_SELECT = `
  select e.id, e.event, e.job_id as "jobId", e.mode, e.created_at as "createdAt",
         case when e.state = 'pending' or r.open then 'pending'
              when e.state = 'delivered' or r.ok then 'delivered'
              else 'failed' end as state,
         case when e.state = 'pending' then e.next_attempt_at else r.queued_at end as "nextAttemptAt"
    from webhook_events e
    left join lateral (
      select bool_or(d.state <> 'done') as open,
             bool_or(d.state = 'done' and d.error_class is null and d.status between 200 and 299) as ok,
             min(d.requested_at) filter (where d.state = 'queued') as queued_at
        from webhook_redeliveries d where d.event_id = e.id) r on true
   where e.customer_id = $1 and ($2::text is null or e.mode = $2)`;

/** A page of events, newest first, with `next_cursor` when more follow. */
export async function listEvents(q: Queryable, f: EventFilter) {
  const r = await q.query<EventRow>(
    `select * from (${EVENT_SELECT}
        and ($3::text is null or e.event = $3) and ($4::text is null or e.job_id = $4)
        and ($5::timestamptz is null or (e.created_at, e.id) < ($5::timestamptz, $6::text))
     ) x
     where ($7::text is null or x.state = $7)
     order by x."createdAt" desc, x.id desc
     limit $8`,
    [
      f.customerId,
      f.mode,
      f.type ?? null,
      f.jobId ?? null,
      f.cursor?.createdAt ?? null,
      f.cursor?.id ?? null,
      f.state ?? null,
      f.limit + 1,
    ],
    'webhook_events_list',
  );
  const rows = r.rows.slice(0, f.limit);
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
  // The operator reads any event: its customer comes from the row itself.
  const r = await q.query<EventRow>(
    `${EVENT_SELECT.replace('e.customer_id = $1', '($1::bigint is null or e.customer_id = $1)')} and e.id = $3`,
    [owner?.customerId ?? null, owner?.mode ?? null, eventId],
    'webhook_event_get',
  );
  const row = r.rows[0];
  if (!row) return null;
  const attempts = await loadAttempts(q, [row.id]);
  const data = await jobEventData(q, codeKey, row.jobId, row.event);
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
