// Redelivery of a webhook event (docs/reference/webhooks-and-events.md#redelivery): one extra attempt, now, to the URL registered
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
import { readAcrossCustomers } from '../../db/reachable-shards.ts';
import { byCustomer } from '../by-customer.ts';
import type { Clock } from '../clock.ts';
import { ApiError } from '../errors.ts';
import { randomBase62 } from '../ids.ts';
import type { Actor } from '../operators/actor.ts';
import { recordAudit } from '../operators/audit.ts';
import { jobEventData } from '../redeem/job-view.ts';
import type { Mode } from '../vocabulary.ts';
import { addWebhookWork } from '../work-queue.ts';
import { attemptErrorClass } from './attempt-errors.ts';
import { type ClaimedRedelivery, claimDueRedeliveries } from './fair-claim.ts';
import { loadRegistration } from './registration.ts';
import type { AttemptOutcome, ClaimedEvent, Deps, WebhookWorkerOptions } from './worker-types.ts';

/** The sender's two functions (delivery.ts), handed over so this file imports none of its code. */
export interface Sender {
  send(
    deps: Deps,
    opts: WebhookWorkerOptions,
    registration: { url: string; secret: string },
    evt: Pick<ClaimedEvent, 'id' | 'event' | 'customerId'>,
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
  const id = /^evt_[A-Za-z0-9]{20,64}$/.test(eventId) ? eventId : null;
  // The operator may ask for any customer's event: its customer first, so the statement below
  // runs on that customer's worker on Citus.
  const whose =
    owner ??
    (id === null
      ? null
      : ((
          await db.query<{ customerId: number; mode: Mode }>(
            'select customer_id as "customerId", mode from webhook_events where id = $1',
            [id],
          )
        ).rows[0] ?? null));
  if (whose === null) throw new ApiError('not_found', 'unknown event');
  // A read, then an insert of values: on Citus an insert fed by a select (or a CTE) is run
  // through the coordinator as a copy, a two-phase commit even for one customer; these two run on
  // the customer's worker (docs/running/citus.md#two-phase-commits). A webhook removed between
  // them leaves a redelivery that is recorded as blocked when its turn comes.
  const seen = await db.query<{ found: boolean; registered: boolean }>(
    `select exists (select 1 from webhook_events where customer_id = $2 and id = $1 and mode = $3) as found,
            exists (select 1 from webhooks w where w.customer_id = $2 and w.mode = $3) as registered`,
    [id, whose.customerId, whose.mode],
    'webhook_redelivery_check',
  );
  if (!seen.rows[0]!.found) throw new ApiError('not_found', 'unknown event');
  if (!seen.rows[0]!.registered) throw new ApiError('conflict', 'no webhook is registered for this mode');
  const r = await db.query<{ id: string }>(
    `insert into webhook_redeliveries (id, customer_id, event_id, requested_at, requested_by)
     values ($1, $2, $3, $4, $5)
     on conflict (customer_id, event_id) where state <> 'done' do nothing
     returning id`,
    [`rdl_${randomBase62(24)}`, whose.customerId, id, clock.now(), requestedBy],
    'webhook_redelivery_request',
  );
  if (r.rows.length === 0)
    throw new ApiError('conflict', 'a redelivery of this event is still in flight; wait for its result');
  await addWebhookWork(db, whose.customerId, whose.mode);
  return { eventId, customerId: whose.customerId, mode: whose.mode };
}

/** The operator's redelivery (POST /admin/v1/events/{id}/redeliver), with its audit row (docs/reference/operators-and-audit.md#audit-log). */
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

/** One pass: closes redeliveries whose sender stopped, then claims and sends the queued ones. */
export async function runDueRedeliveries(
  deps: Deps,
  opts: WebhookWorkerOptions,
  sender: Sender,
  stop?: AbortSignal,
): Promise<number> {
  await expireStaleRedeliveries(deps);
  const claimed = await claimDueRedeliveries(deps, {
    limit: opts.batchSize ?? 10,
    leaseMs: opts.leaseMs ?? 60_000,
    perCustomer: opts.perCustomer,
  });
  await Promise.all(claimed.map((r) => sendRedelivery(deps, opts, sender, r, stop)));
  return claimed.length;
}

/** Closes, as failed attempts, redeliveries whose sender stopped (their lease ran out). */
export async function expireStaleRedeliveries(deps: Deps): Promise<void> {
  // Found by a read (on Citus it asks every worker; while one does not answer, the others' rows:
  // readAcrossCustomers), then closed one customer at a time, each again only if still stale: this runs on every pass of the webhook worker, and an update
  // naming no customer writes every worker's shard, a two-phase commit each time
  // (docs/running/citus.md#two-phase-commits).
  const now = deps.clock.now();
  const stale = await readAcrossCustomers<{ customerId: number; id: string }>(deps.db, {
    tables: ['webhook_redeliveries'],
    sql: `select customer_id as "customerId", id from webhook_redeliveries where state = 'sending' and locked_until <= $1`,
    params: [now],
    name: 'webhook_redelivery_stale',
  });
  for (const [customerId, rows] of byCustomer(stale.rows))
    await deps.db.query(
      `update webhook_redeliveries
          set state = 'done', locked_until = null, error_class = 'connection', duration_ms = 0,
              error = 'the process stopped while sending; it may have arrived'
        where customer_id = $2 and id = any($3::text[]) and state = 'sending' and locked_until <= $1`,
      [now, customerId, rows.map((r) => r.id)],
      'webhook_redelivery_expire',
    );
}

/** Sends one claimed redelivery and records it; a failure to record is logged, never thrown. */
export async function sendRedelivery(
  deps: Deps,
  opts: WebhookWorkerOptions,
  sender: Sender,
  r: ClaimedRedelivery,
  stop?: AbortSignal,
): Promise<void> {
  try {
    await sendAndRecord(deps, opts, sender, r, stop);
  } catch (err) {
    // Left `sending`: closed as failed once its lease runs out (never sent twice).
    deps.logger.error({ err, eventId: r.eventId }, 'webhook redelivery could not be recorded');
  }
}

async function sendAndRecord(
  deps: Deps,
  opts: WebhookWorkerOptions,
  sender: Sender,
  r: ClaimedRedelivery,
  stop?: AbortSignal,
): Promise<void> {
  const evt = { id: r.eventId, event: r.event, createdAt: r.createdAt, customerId: r.customerId };
  const registration = await loadRegistration(deps.db, deps.codeKey, r);
  const data = registration
    ? await jobEventData(deps.db, deps.codeKey, { customerId: r.customerId, id: r.jobId }, r.event)
    : null;
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
      where customer_id = $7 and id = $1 and state = 'sending'`,
    [r.id, outcome.url, outcome.status, outcome.error, errorClass, durationMs, r.customerId],
    'webhook_redelivery_record',
  );
  deps.metrics?.webhookAttempt(r.mode, errorClass === null ? 'delivered' : 'failed', null);
  deps.logger.info(
    { eventId: r.eventId, status: outcome.status, error: errorClass, durationMs },
    errorClass === null ? 'webhook redelivered' : 'webhook redelivery failed',
  );
}
