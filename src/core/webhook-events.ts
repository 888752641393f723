// The webhook outbox: an event row is written in the transaction that ends an async job, only
// when the customer has a webhook registered for that mode. The webhook worker delivers it.
import type { Queryable } from '../db/database.ts';
import type { Mode } from './accounts.ts';
import type { Clock } from './clock.ts';
import { newEventId } from './ids.ts';
import type { JobEvent } from './job-view.ts';

export async function enqueueJobEvent(
  tx: Queryable,
  job: { id: string; customerId: number; mode: Mode },
  event: JobEvent,
  clock: Clock,
): Promise<string | null> {
  const id = newEventId();
  const r = await tx.query(
    `insert into webhook_events (id, customer_id, mode, job_id, event, created_at, next_attempt_at)
     select $1, $2, $3, $4, $5, $6, $6 from webhooks where customer_id = $2 and mode = $3`,
    [id, job.customerId, job.mode, job.id, event, clock.now()],
  );
  return r.rowCount > 0 ? id : null;
}
