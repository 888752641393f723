// A job's event in the webhook outbox: an event row is written in the transaction that ends an
// async job, only when the customer has a webhook registered for that mode (SQL function
// webhook_event_enqueue, which an async job's finish, job_finish_async, calls in the same
// statement; this is its caller for a job stopped from TypeScript). The webhook worker
// (webhooks/) delivers it.
import type { Queryable } from '../../db/database.ts';
import type { Clock } from '../clock.ts';
import { newEventId } from '../ids.ts';
import type { JobEvent, Mode } from '../vocabulary.ts';

export async function enqueueJobEvent(
  tx: Queryable,
  job: { id: string; customerId: number; mode: Mode },
  event: JobEvent,
  clock: Clock,
): Promise<string | null> {
  const id = newEventId();
  const r = await tx.query<{ written: boolean }>(
    'select webhook_event_enqueue($1, $2, $3, $4, $5, $6) as written',
    [id, job.customerId, job.mode, job.id, event, clock.now()],
    'webhook_event_enqueue',
  );
  return r.rows[0]!.written ? id : null;
}
