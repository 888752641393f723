// The webhook backlog as the metrics read it at scrape time (contract 12.8 and 13.8): pending
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
    `select count(*) filter (where next_attempt_at <= now() and (locked_until is null or locked_until <= now()))::int as due,
            count(*) filter (where locked_until > now())::int as sending,
            count(*) filter (where next_attempt_at > now() and (locked_until is null or locked_until <= now()))::int as retry_wait,
            (select count(*)::int from webhook_redeliveries where state = 'queued') as redeliveries_queued,
            (select count(*)::int from webhook_redeliveries where state = 'sending') as redeliveries_sending,
            extract(epoch from now() - min(created_at))::float8 as oldest_age_seconds,
            (select count(*)::int from webhook_receiver_health where consecutive_failures >= $1) as receivers_backed_off
       from webhook_events where state = 'pending'`,
    [FAILING_RECEIVER_THRESHOLD],
  );
  return r.rows[0]!;
}
