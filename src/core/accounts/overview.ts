// The operator's overview: what needs attention now (queue, quarantine, webhooks). Each count
// reads a partial index of unfinished work, so it stays cheap however long the history grows.
import type { Queryable } from '../../db/database.ts';
import { isoUtc } from '../clock.ts';

export async function serviceOverview(q: Queryable, now: Date) {
  const r = await q.query<{
    queued: number;
    running: number;
    oldestQueuedAt: Date | null;
    quarantined: number;
    webhooksPending: number;
    webhooksFailing: number;
    webhooksDropped: number;
    customers: number;
  }>(
    `select
       (select count(*)::int from jobs where status = 'queued') as queued,
       (select count(*)::int from jobs where status = 'running') as running,
       (select min(created_at) from jobs where status = 'queued') as "oldestQueuedAt",
       (select count(*)::int from job_codes
         where disposition = 'quarantined' and settled_at is null and not reused) as quarantined,
       (select count(*)::int from webhook_events where state = 'pending') as "webhooksPending",
       (select count(*)::int from webhook_events where state = 'pending' and attempts > 0) as "webhooksFailing",
       (select count(*)::int from webhook_events
         where state = 'dropped' and finished_at >= $1) as "webhooksDropped",
       (select count(*)::int from customers) as customers`,
    [new Date(now.getTime() - 86_400_000)],
  );
  const o = r.rows[0]!;
  return {
    queue: {
      queued: o.queued,
      running: o.running,
      oldest_queued_at: o.oldestQueuedAt ? isoUtc(o.oldestQueuedAt) : null,
    },
    quarantined_codes: o.quarantined,
    webhooks: { pending: o.webhooksPending, failing: o.webhooksFailing, dropped_24h: o.webhooksDropped },
    customers: o.customers,
  };
}
