// The operator's overview: what needs attention now (queue, quarantine, webhooks). Each count
// reads a partial index of unfinished work, so it stays cheap however long the history grows.
// With a mode every count is of that mode only (a test-mode quarantine is not a live problem);
// without one, both modes together. Customers are counted whatever the mode.
import type { Queryable } from '../../db/database.ts';
import { isoUtc } from '../clock.ts';
import type { Mode } from '../vocabulary.ts';

export async function serviceOverview(q: Queryable, now: Date, mode: Mode | null = null) {
  const r = await q.query<{
    queued: number;
    running: number;
    oldestQueuedAt: Date | null;
    quarantined: number;
    webhooksPending: number;
    webhooksFailing: number;
    webhooksDropped: number;
    webhooksFailed: number;
    customers: number;
  }>(
    `select
       (select count(*)::int from jobs where status = 'queued' and ($2::text is null or mode = $2)) as queued,
       (select count(*)::int from jobs where status = 'running' and ($2::text is null or mode = $2)) as running,
       (select min(created_at) from jobs where status = 'queued' and ($2::text is null or mode = $2))
         as "oldestQueuedAt",
       (select count(*)::int from job_codes c
         where c.disposition = 'quarantined' and c.settled_at is null and not c.reused
           and ($2::text is null or exists (select 1 from jobs j where j.customer_id = c.customer_id and j.id = c.job_id and j.mode = $2)))
         as quarantined,
       (select count(*)::int from webhook_events where state = 'pending' and ($2::text is null or mode = $2))
         as "webhooksPending",
       (select count(*)::int from webhook_events
         where state = 'pending' and attempts > 0 and ($2::text is null or mode = $2)) as "webhooksFailing",
       (select count(*)::int from webhook_events
         where state = 'dropped' and finished_at >= $1 and ($2::text is null or mode = $2)) as "webhooksDropped",
       (select count(*)::int from webhook_events
         where state = 'dropped' and finished_at >= $1 and log_state = 'failed' and ($2::text is null or mode = $2))
         as "webhooksFailed",
       (select count(*)::int from customers) as customers`,
    [new Date(now.getTime() - 86_400_000), mode],
  );
  const o = r.rows[0]!;
  return {
    mode,
    queue: {
      queued: o.queued,
      running: o.running,
      oldest_queued_at: o.oldestQueuedAt ? isoUtc(o.oldestQueuedAt) : null,
    },
    quarantined_codes: o.quarantined,
    webhooks: {
      pending: o.webhooksPending,
      failing: o.webhooksFailing,
      dropped_24h: o.webhooksDropped,
      // In the event log's words (docs/reference/webhooks-and-events.md#the-event-log): events whose automatic attempts all failed in
      // the last 24 hours and that no redelivery has delivered since.
      failed_24h: o.webhooksFailed,
    },
    customers: o.customers,
  };
}
