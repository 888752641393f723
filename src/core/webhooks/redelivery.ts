// Redelivery of a webhook event (contract 13.6): one extra attempt, now, to the URL registered
// now, signed with the current secret, with the same event id and SVC-Delivery-Id. It never
// touches the automatic schedule: webhook_events' attempts, next_attempt_at and state are not
// read for it nor written by it.
//
// How it runs, so that a crash never loses it or sends it twice: the request commits a queued
// row (webhook_redeliveries) before it answers 202, and wakes the webhook worker, which claims
// the row (queued -> sending, with a lease) in one statement, sends, and records the result in
// the same row (-> done). A process that stops before the claim leaves the row queued: the next
// pass (this process after a restart, or another process) sends it. A process that stops while
// sending leaves it `sending`; when its lease has run out the row is closed as a failed attempt
// (error `connection`) and not sent again, since the receiver may have got it; the merchant sees
// that attempt and may ask again. One row per request, so an attempt is never doubled.
import type { Database, Queryable } from '../../db/database.ts';
import type { Mode } from '../accounts/accounts.ts';
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';
import { randomBase62 } from '../ids.ts';
import { type JobEvent, jobEventData } from '../jobs/view.ts';
import type { Actor } from '../operators/actor.ts';
import { recordAudit } from '../operators/audit.ts';
import { attemptErrorClass } from './attempt-errors.ts';
import type { AttemptOutcome, ClaimedEvent, Deps, WebhookWorkerOptions } from './delivery.ts';
import { loadRegistration } from './registration.ts';

/** The sender's two functions (delivery.ts), handed over so this file imports none of its code. */
export interface Sender {
  send(
    deps: Deps,
    opts: WebhookWorkerOptions,
    registration: { url: string; secret: string },
    evt: Pick<ClaimedEvent, 'id' | 'event'>,
    body: Buffer,
    stop?: AbortSignal,
  ): Promise<AttemptOutcome>;
  envelope(evt: Pick<ClaimedEvent, 'id' | 'event' | 'createdAt'>, data: unknown): Buffer;
}

/** Whose event: a merchant's key (its customer and mode), or the operator (any event). */
export type EventOwner = { customerId: number; mode: Mode } | null;

/**
 * Queues a redelivery of an event the owner can see. 404 for an unknown or foreign event, 409
 * when no webhook is registered for its customer and mode or one is still queued or in flight.
 */
export async function requestRedelivery(
  db: Queryable,
  clock: Clock,
  owner: EventOwner,
  eventId: string,
  requestedBy: string,
): Promise<{ eventId: string; customerId: number; mode: Mode }> {
  const r = await db.query<{
    found: boolean;
    registered: boolean;
    queued: string | null;
    customerId: number;
    mode: Mode;
  }>(
    `with e as (
       select id, customer_id, mode from webhook_events
        where id = $1 and ($2::bigint is null or (customer_id = $2 and mode = $3))
     ), ins as (
       insert into webhook_redeliveries (id, event_id, requested_at, requested_by)
       select $4, e.id, $5, $6 from e
        where exists (select 1 from webhooks w where w.customer_id = e.customer_id and w.mode = e.mode)
       on conflict (event_id) where state <> 'done' do nothing
       returning id
     )
     select exists (select 1 from e) as found,
            exists (select 1 from e join webhooks w on w.customer_id = e.customer_id and w.mode = e.mode) as registered,
            (select id from ins) as queued,
            (select customer_id from e) as "customerId", (select mode from e) as mode`,
    [
      /^evt_[A-Za-z0-9]{20,64}$/.test(eventId) ? eventId : null,
      owner?.customerId ?? null,
      owner?.mode ?? null,
      `rdl_${randomBase62(24)}`,
      clock.now(),
      requestedBy,
    ],
    'webhook_redelivery_request',
  );
  const row = r.rows[0]!;
  if (!row.found) throw new ApiError('not_found', 'unknown event');
  if (!row.registered) throw new ApiError('conflict', 'no webhook is registered for this mode');
  if (row.queued === null)
    throw new ApiError('conflict', 'a redelivery of this event is still in flight; wait for its result');
  return { eventId, customerId: row.customerId, mode: row.mode };
}

/** The operator's redelivery (POST /admin/v1/events/{id}/redeliver), with its audit row (13.2). */
export async function requestRedeliveryAs(
  deps: { db: Database; clock: Clock },
  actor: Actor,
  eventId: string,
): Promise<{ eventId: string }> {
  return deps.db.transaction(async (tx) => {
    const r = await requestRedelivery(tx, deps.clock, null, eventId, 'operator');
    await recordAudit(
      tx,
      actor,
      { action: 'event.redeliver', customerId: r.customerId, target: eventId, details: { mode: r.mode } },
      deps.clock,
    );
    return { eventId };
  });
}

interface ClaimedRedelivery {
  id: string;
  eventId: string;
  customerId: number;
  mode: Mode;
  jobId: string;
  event: JobEvent;
  createdAt: Date;
}

/** One pass: closes redeliveries whose sender stopped, then claims and sends the queued ones. */
export async function runDueRedeliveries(
  deps: Deps,
  opts: WebhookWorkerOptions,
  sender: Sender,
  stop?: AbortSignal,
): Promise<number> {
  const now = deps.clock.now();
  await deps.db.query(
    `update webhook_redeliveries
        set state = 'done', locked_until = null, error_class = 'connection', duration_ms = 0,
            error = 'the process stopped while sending; it may have arrived'
      where state = 'sending' and locked_until <= $1`,
    [now],
    'webhook_redelivery_expire',
  );
  const claimed = await deps.db.query<ClaimedRedelivery>(
    `with c as (
       update webhook_redeliveries r set state = 'sending', locked_until = $2, started_at = $1
        where r.id in (select id from webhook_redeliveries where state = 'queued'
                        order by requested_at limit $3 for update skip locked)
       returning r.id, r.event_id
     )
     select c.id, c.event_id as "eventId", e.customer_id as "customerId", e.mode, e.job_id as "jobId",
            e.event, e.created_at as "createdAt"
       from c join webhook_events e on e.id = c.event_id`,
    [now, new Date(now.getTime() + (opts.leaseMs ?? 60_000)), opts.batchSize ?? 10],
    'webhook_redelivery_claim',
  );
  await Promise.all(
    claimed.rows.map((r) =>
      sendRedelivery(deps, opts, sender, r, stop).catch((err: unknown) => {
        // Left `sending`: closed as failed once its lease runs out (never sent twice).
        deps.logger.error({ err, eventId: r.eventId }, 'webhook redelivery could not be recorded');
      }),
    ),
  );
  return claimed.rows.length;
}

async function sendRedelivery(
  deps: Deps,
  opts: WebhookWorkerOptions,
  sender: Sender,
  r: ClaimedRedelivery,
  stop?: AbortSignal,
): Promise<void> {
  const evt = { id: r.eventId, event: r.event, createdAt: r.createdAt };
  const registration = await loadRegistration(deps.db, deps.codeKey, r);
  const data = registration ? await jobEventData(deps.db, deps.codeKey, r.jobId, r.event) : null;
  const started = performance.now();
  const outcome: AttemptOutcome =
    registration && data
      ? await sender.send(deps, opts, registration, evt, sender.envelope(evt, data), stop)
      : { status: null, error: 'blocked: no webhook registered any more', url: registration?.url ?? '' };
  const durationMs = Math.round(performance.now() - started);
  const errorClass = attemptErrorClass(outcome.status, outcome.error);
  await deps.db.query(
    `update webhook_redeliveries
        set state = 'done', locked_until = null, url = $2, status = $3, error = $4, error_class = $5,
            duration_ms = $6
      where id = $1 and state = 'sending'`,
    [r.id, outcome.url, outcome.status, outcome.error, errorClass, durationMs],
    'webhook_redelivery_record',
  );
  deps.metrics?.webhookAttempt(r.mode, errorClass === null ? 'delivered' : 'failed', null);
  deps.logger.info(
    { eventId: r.eventId, status: outcome.status, error: errorClass, durationMs },
    errorClass === null ? 'webhook redelivered' : 'webhook redelivery failed',
  );
}
