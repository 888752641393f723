// The operator's view of webhooks across customers: the event log of every customer at
// once (the failed ones, by default the console's "Webhooks" page), each event with its customer
// and the receiver's last error as the sender recorded it; and one customer's registered
// receivers with their recent success rate. Read-only; the event log itself is event-log.ts.
import type { Queryable } from '../../db/database.ts';
import { type Clock, isoUtc } from '../clock.ts';
import type { Mode } from '../vocabulary.ts';
import { type EventFilter, type EventRecord, listEvents } from './event-log.ts';

/** What a receiver's recent success rate counts: attempts that started in the last 24 hours. */
export const HEALTH_WINDOW_MS = 24 * 3_600_000;

export interface EventAcrossCustomers extends EventRecord {
  customer_id: number;
  customer_name: string;
  /** The last automatic attempt's failure as the sender recorded it (`answered 500`, `timed out`). */
  last_error: { status: number | null; message: string } | null;
}

/** A page of events of every customer (or one), newest first, each with its customer and last error. */
export async function listEventsAcrossCustomers(q: Queryable, f: EventFilter) {
  const page = await listEvents(q, f);
  const ids = page.events.map((e) => e.id);
  const r = await q.query<{
    id: string;
    customerId: number;
    name: string;
    lastStatus: number | null;
    lastError: string | null;
  }>(
    `select e.id, e.customer_id as "customerId", c.name, e.last_status as "lastStatus", e.last_error as "lastError"
       from webhook_events e join customers c on c.id = e.customer_id
      where e.id = any($1::text[])`,
    [ids],
  );
  const owners = new Map(r.rows.map((row) => [row.id, row]));
  const events: EventAcrossCustomers[] = page.events.map((e) => {
    const o = owners.get(e.id);
    return {
      ...e,
      customer_id: Number(o?.customerId),
      customer_name: o?.name ?? '',
      last_error: o?.lastError ? { status: o.lastStatus, message: o.lastError } : null,
    };
  });
  return { events, next_cursor: page.next_cursor };
}

/**
 * A URL as the operator may see it: every query-string value and a password in the URL masked
 * (`?token=***`), since receivers often authenticate with a secret there.
 */
export function maskWebhookUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return '***';
  }
  if (url.password) url.password = '***';
  const query = [...url.searchParams.keys()].map((k) => `${encodeURIComponent(k)}=***`).join('&');
  url.search = '';
  // URL would percent-encode the stars; the query is put back as text.
  return `${url.toString()}${query ? `?${query}` : ''}`;
}

export interface ReceiverHealth {
  url: string;
  registered_at: string;
  /** Attempts (automatic and redeliveries) that started within the window, and those answered 2xx. */
  attempted: number;
  delivered: number;
  /** delivered / attempted, or null when nothing was attempted. */
  success_rate: number | null;
  consecutive_failures: number;
  last_failure_at: string | null;
  /** When the current run of failures began; null while the receiver delivers. */
  failing_since: string | null;
}

/** The customer's receiver per mode (null: none registered) with its last 24 hours. */
export async function receiversOf(
  q: Queryable,
  customerId: number,
  clock: Clock,
): Promise<Record<Mode, ReceiverHealth | null>> {
  const since = new Date(clock.now().getTime() - HEALTH_WINDOW_MS);
  const r = await q.query<{
    mode: Mode;
    url: string;
    createdAt: Date;
    attempted: number;
    delivered: number;
    failures: number | null;
    lastFailureAt: Date | null;
    failingSince: Date | null;
  }>(
    // Attempts are reached through the customer's events written in the last two windows (an
    // index range; the automatic schedule is minutes long): a redelivery of an older event is
    // not counted.
    `select w.mode, w.url, w.created_at as "createdAt",
            h.consecutive_failures as failures, h.last_failure_at as "lastFailureAt",
            h.failing_since as "failingSince",
            coalesce(a.attempted, 0)::int as attempted, coalesce(a.delivered, 0)::int as delivered
       from webhooks w
       left join webhook_receiver_health h on h.customer_id = w.customer_id and h.mode = w.mode
       left join lateral (
         select count(*) as attempted,
                count(*) filter (where x.status between 200 and 299 and x.error is null) as delivered
           from webhook_events e
           cross join lateral (
             select t.status, t.error from webhook_attempts t
              where t.customer_id = e.customer_id and t.event_id = e.id and t.started_at >= $2
             union all
             select d.status, d.error from webhook_redeliveries d
              where d.customer_id = e.customer_id and d.event_id = e.id and d.state = 'done' and d.started_at >= $2) x
          where e.customer_id = w.customer_id and e.mode = w.mode and e.created_at >= $3
       ) a on true
      where w.customer_id = $1`,
    [customerId, since, new Date(since.getTime() - HEALTH_WINDOW_MS)],
  );
  const out: Record<Mode, ReceiverHealth | null> = { live: null, test: null };
  for (const row of r.rows)
    out[row.mode] = {
      url: maskWebhookUrl(row.url),
      registered_at: isoUtc(new Date(row.createdAt)),
      attempted: row.attempted,
      delivered: row.delivered,
      success_rate: row.attempted ? Math.round((row.delivered / row.attempted) * 1000) / 1000 : null,
      consecutive_failures: row.failures ?? 0,
      last_failure_at: row.lastFailureAt ? isoUtc(new Date(row.lastFailureAt)) : null,
      failing_since: row.failures && row.failingSince ? isoUtc(new Date(row.failingSince)) : null,
    };
  return out;
}
