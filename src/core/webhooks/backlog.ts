// The webhook backlog as the metrics read it at scrape time (docs/reference/running.md#metrics, docs/reference/webhooks-and-events.md#fair-delivery): pending
// events by state (due, sending, waiting for a retry), redeliveries queued and being sent, the age
// of the oldest pending event, and the receivers backed off for failing. Only pending rows are
// read (the partial index webhook_events_due), so it costs the same however many events were
// delivered.
import type { Queryable } from '../../db/database.ts';
import { FAILING_RECEIVER_THRESHOLD } from './worker-types.ts';

export interface WebhookBacklog {
  due: number;
  sending: number;
  retry_wait: number;
  redeliveries_queued: number;
  redeliveries_sending: number;
  oldest_age_seconds: number | null;
  receivers_backed_off: number;
}

export async function webhookBacklog(q: Pick<Queryable, 'query'>): Promise<WebhookBacklog> {
  const r = await q.query<WebhookBacklog>(
    // Three aggregates side by side in FROM (on Citus each is summed over the workers first;
    // a subquery in the select list beside an aggregate cannot be).
    `select e.due, e.sending, e.retry_wait, r.redeliveries_queued, r.redeliveries_sending,
            e.oldest_age_seconds, h.receivers_backed_off
       from (select count(*) filter (where next_attempt_at <= now() and (locked_until is null or locked_until <= now()))::int as due,
                    count(*) filter (where locked_until > now())::int as sending,
                    count(*) filter (where next_attempt_at > now() and (locked_until is null or locked_until <= now()))::int as retry_wait,
                    extract(epoch from now() - min(created_at))::float8 as oldest_age_seconds
               from webhook_events where state = 'pending') e,
            (select count(*) filter (where state = 'queued')::int as redeliveries_queued,
                    count(*) filter (where state = 'sending')::int as redeliveries_sending
               from webhook_redeliveries where state in ('queued', 'sending')) r,
            (select count(*)::int as receivers_backed_off
               from webhook_receiver_health where consecutive_failures >= $1) h`,
    [FAILING_RECEIVER_THRESHOLD],
  );
  return r.rows[0]!;
}
