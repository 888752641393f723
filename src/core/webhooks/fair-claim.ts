// Fair claims of webhook attempts (docs/reference/webhooks-and-events.md#fair-delivery), across processes, as claimJob (jobs/states.ts)
// does for jobs:
// - every process claims with FOR UPDATE SKIP LOCKED and a lease (locked_until), and takes the
//   attempt number in the same statement, so no attempt is ever sent twice;
// - a customer's attempts in flight are counted from the database (leased events and redeliveries
//   being sent, of every process), and a customer at PER_CUSTOMER_ATTEMPTS gets no more;
// - a receiver that keeps failing (webhook_receiver_health, migration 0060) gets one attempt at
//   a time; its events wait, none is dropped and no retry is used up for it;
// - the candidates are taken round-robin: each customer's first due event before anyone's second,
//   live before test, then the customer whose last claim is the oldest (webhook_claim_turns).
// Only each receiver's first few due events are candidates, found by a skip scan over the
// pending index, so a claim costs the same behind a backlog of a hundred or of a million.
import { shardedByCustomer } from '../../db/citus.ts';
import type { JobEvent, Mode } from '../vocabulary.ts';
import {
  onReachableWorker,
  repairWorkQueue,
  tookTurns,
  UNREACHABLE,
  type WorkTurn,
  workTurns,
} from '../work-queue.ts';
import {
  type ClaimedEvent,
  type Deps,
  FAILING_RECEIVER_THRESHOLD,
  PER_CUSTOMER_ATTEMPTS,
} from './worker-types.ts';

/** A customer's attempts in flight now, of every process (`o` is the row naming the customer). */
const RUNNING_OF = (o: string) => `(
  (select count(*) from webhook_events b
    where b.customer_id = ${o}.customer_id and b.state = 'pending' and b.locked_until > $1)
  + (select count(*) from webhook_redeliveries r
      where r.customer_id = ${o}.customer_id and r.state = 'sending' and r.locked_until > $1))::int`;

/** RUNNING_OF for one customer given as a parameter (the claims on Citus): `customer` and `now` name them. */
const runningOfCustomer = (customer: string, now: string) => `(
  (select count(*) from webhook_events b
    where b.customer_id = ${customer} and b.state = 'pending' and b.locked_until > ${now})
  + (select count(*) from webhook_redeliveries r
      where r.customer_id = ${customer} and r.state = 'sending' and r.locked_until > ${now}))::int`;

export interface FairClaimOptions {
  /** Attempts to claim at most (this process's free slots). */
  limit: number;
  leaseMs: number;
  /** Default PER_CUSTOMER_ATTEMPTS. */
  perCustomer?: number;
}

/** Claims due events fairly; each comes with its attempt number already taken. */
export async function claimDueEventsFairly(deps: Deps, opts: FairClaimOptions): Promise<ClaimedEvent[]> {
  if (opts.limit <= 0) return [];
  if (await shardedByCustomer(deps.db)) return claimEventsByTurns(deps, opts);
  const now = deps.clock.now();
  const r = await deps.db.query<ClaimedEvent>(
    `with recursive owners (customer_id, mode) as (
       (select customer_id, mode from webhook_events where state = 'pending' order by customer_id, mode limit 1)
       union all
       select n.customer_id, n.mode
         from owners o,
              lateral (select customer_id, mode from webhook_events
                        where state = 'pending' and (customer_id, mode) > (o.customer_id, o.mode)
                        order by customer_id, mode limit 1) n
     ),
     busy as (
       select o.customer_id, o.mode, ${RUNNING_OF('o')} as running,
              (select count(*)::int from webhook_events x where x.customer_id = o.customer_id
                  and x.mode = o.mode and x.state = 'pending' and x.locked_until > $1) as receiver_running,
              coalesce((select h.consecutive_failures >= $5 from webhook_receiver_health h
                         where h.customer_id = o.customer_id and h.mode = o.mode), false) as failing
         from owners o
     ),
     candidates as (
       select d.id, d.next_attempt_at, b.customer_id, b.mode, b.running,
              row_number() over (partition by b.customer_id order by d.next_attempt_at, d.id) as k
         from busy b,
              lateral (select e.id, e.next_attempt_at from webhook_events e
                        where e.customer_id = b.customer_id and e.mode = b.mode and e.state = 'pending'
                          and e.next_attempt_at <= $1 and (e.locked_until is null or e.locked_until <= $1)
                        order by e.next_attempt_at, e.id
                        -- A failing receiver: one attempt at a time.
                        limit (case when b.failing then greatest(0, 1 - b.receiver_running) else $4::int end)) d
        -- A disabled customer's webhooks are not sent (docs/reference/jobs.md#disabled-customers).
        where not exists (select 1 from customers dc where dc.id = b.customer_id and dc.disabled_at is not null)
     ),
     ranked as (
       select c.id, row_number() over (
                order by c.k, (c.mode = 'test'),
                         (select t.last_turn from webhook_claim_turns t where t.customer_id = c.customer_id) nulls first,
                         c.next_attempt_at, c.id) as turn
         from candidates c
        where c.k <= $4::int - c.running
     ),
     claimed as (
       update webhook_events e
          set attempts = e.attempts + 1, locked_until = $2
        where e.id in (
          select w.id from webhook_events w join ranked on ranked.id = w.id
           where w.state = 'pending' and (w.locked_until is null or w.locked_until <= $1)
           order by ranked.turn
           limit $3
           for update of w skip locked)
       returning e.id, e.customer_id as "customerId", e.mode, e.job_id as "jobId", e.event,
                 e.created_at as "createdAt", e.attempts
     ),
     took_turn as (
       insert into webhook_claim_turns (customer_id, last_turn)
       select c.customer_id, nextval('webhook_claim_turn')
         from (select distinct "customerId" as customer_id from claimed) c
       on conflict (customer_id) do update set last_turn = excluded.last_turn
     )
     select * from claimed`,
    [
      now,
      new Date(now.getTime() + opts.leaseMs),
      opts.limit,
      opts.perCustomer ?? PER_CUSTOMER_ATTEMPTS,
      FAILING_RECEIVER_THRESHOLD,
    ],
    'webhook_claim_fair',
  );
  return r.rows;
}

/**
 * claimDueEventsFairly on Citus: the customers with webhook work come from work_queue in turn
 * order, and each is claimed on its own worker (docs/running/citus.md#fair-claims-on-citus):
 * first one event each, then what room is left, in the same order. The rules per customer are
 * the same: PER_CUSTOMER_ATTEMPTS in flight, one at a time to a failing receiver, none for a
 * disabled customer.
 */
async function claimEventsByTurns(deps: Deps, opts: FairClaimOptions): Promise<ClaimedEvent[]> {
  await repairWorkQueue(deps.db, Date.now());
  const turns = await workTurns(deps.db, 'webhook');
  const claimed: ClaimedEvent[] = [];
  const empty: WorkTurn[] = [];
  const done = new Set<WorkTurn>();
  for (const perTurn of [1, opts.limit]) {
    for (const turn of turns) {
      const room = Math.min(perTurn, opts.limit - claimed.length);
      if (room <= 0) break;
      if (done.has(turn)) continue;
      const rows = await onReachableWorker(() => claimEventsOf(deps, opts, turn, room));
      // Its worker did not answer: skipped, to the back of the turn order with its row kept.
      if (rows === UNREACHABLE) {
        done.add(turn);
        continue;
      }
      claimed.push(...rows);
      if (rows.length < room) done.add(turn);
      if (rows.length === 0 && !(await webhookWorkLeft(deps, turn))) empty.push(turn);
    }
  }
  await tookTurns(deps.db, 'webhook', turns, empty);
  return claimed;
}

/**
 * Up to `room` due events of one customer and mode, with its rules, on its worker: how many it
 * may have is read first, then that many are claimed (Citus plans a LIMIT taken from a
 * subquery of the same statement wrongly: it claimed every due event).
 */
async function claimEventsOf(
  deps: Deps,
  opts: FairClaimOptions,
  turn: WorkTurn,
  room: number,
): Promise<ClaimedEvent[]> {
  const now = deps.clock.now();
  const allowed = await deps.db.query<{ k: number }>(
    `select greatest(0, case
              -- A disabled customer's webhooks are not sent (docs/reference/jobs.md#disabled-customers).
              when exists (select 1 from customers dc where dc.id = $5 and dc.disabled_at is not null) then 0
              -- A failing receiver: one attempt at a time.
              when coalesce((select h.consecutive_failures >= $4 from webhook_receiver_health h
                              where h.customer_id = $5 and h.mode = $6), false)
                then least(1 - (select count(*)::int from webhook_events x where x.customer_id = $5
                                   and x.mode = $6 and x.state = 'pending' and x.locked_until > $1),
                           $3::int - ${runningOfCustomer('$5', '$1')})
              else least($2::int, $3::int - ${runningOfCustomer('$5', '$1')}) end)::int as k`,
    [
      now,
      room,
      opts.perCustomer ?? PER_CUSTOMER_ATTEMPTS,
      FAILING_RECEIVER_THRESHOLD,
      turn.customerId,
      turn.mode,
    ],
    'webhook_claim_room',
  );
  const k = allowed.rows[0]!.k;
  if (k <= 0) return [];
  // Locked, then claimed, in one transaction on the customer's worker: Citus returned every due
  // event from an update whose `id in (select … limit … for update skip locked)` named one.
  return deps.db.transaction(async (tx) => {
    const picked = await tx.query<{ id: string }>(
      `select id from webhook_events
        where customer_id = $2 and mode = $3 and state = 'pending'
          and next_attempt_at <= $1 and (locked_until is null or locked_until <= $1)
        order by next_attempt_at, id
        limit $4
        for update skip locked`,
      [now, turn.customerId, turn.mode, k],
      'webhook_claim_pick',
    );
    if (picked.rows.length === 0) return [];
    const r = await tx.query<ClaimedEvent>(
      `update webhook_events e
          set attempts = e.attempts + 1, locked_until = $1
        where e.customer_id = $2 and e.id = any($3::text[])
       returning e.id, e.customer_id as "customerId", e.mode, e.job_id as "jobId", e.event,
                 e.created_at as "createdAt", e.attempts`,
      [new Date(now.getTime() + opts.leaseMs), turn.customerId, picked.rows.map((p) => p.id)],
      'webhook_claim_routed',
    );
    return r.rows;
  });
}

/** Whether a customer still has webhook work of a mode: an event pending, or a redelivery queued. */
async function webhookWorkLeft(deps: Deps, turn: WorkTurn): Promise<boolean> {
  const r = await deps.db.query<{ left: boolean }>(
    `select exists (select 1 from webhook_events where customer_id = $1 and mode = $2 and state = 'pending')
         or exists (select 1 from webhook_redeliveries r
                      join webhook_events e on e.customer_id = r.customer_id and e.id = r.event_id
                     where r.customer_id = $1 and e.mode = $2 and r.state = 'queued') as left`,
    [turn.customerId, turn.mode],
    'webhook_work_left',
  );
  return r.rows[0]!.left;
}

export interface ClaimedRedelivery {
  id: string;
  eventId: string;
  customerId: number;
  mode: Mode;
  jobId: string;
  event: JobEvent;
  createdAt: Date;
}

/**
 * Claims queued redeliveries (docs/reference/webhooks-and-events.md#redelivery), oldest first, within the same per-customer limit
 * as the scheduled attempts (a redelivery is an attempt too).
 */
export async function claimDueRedeliveries(deps: Deps, opts: FairClaimOptions): Promise<ClaimedRedelivery[]> {
  if (opts.limit <= 0) return [];
  if (await shardedByCustomer(deps.db)) return claimRedeliveriesByTurns(deps, opts);
  const now = deps.clock.now();
  const r = await deps.db.query<ClaimedRedelivery>(
    `with room as (
       select q.id from (
         select q2.id, e.customer_id,
                row_number() over (partition by e.customer_id order by q2.requested_at, q2.id) as k
           from webhook_redeliveries q2 join webhook_events e on e.id = q2.event_id
          where q2.state = 'queued') q
        where q.k <= $4::int - ${RUNNING_OF('q')}
     ),
     c as (
       update webhook_redeliveries r set state = 'sending', locked_until = $2, started_at = $1
        where r.id in (select w.id from webhook_redeliveries w
                        where w.state = 'queued' and w.id in (select id from room)
                        order by w.requested_at limit $3 for update skip locked)
       returning r.id, r.event_id
     )
     select c.id, c.event_id as "eventId", e.customer_id as "customerId", e.mode, e.job_id as "jobId",
            e.event, e.created_at as "createdAt"
       from c join webhook_events e on e.id = c.event_id`,
    [now, new Date(now.getTime() + opts.leaseMs), opts.limit, opts.perCustomer ?? PER_CUSTOMER_ATTEMPTS],
    'webhook_redelivery_claim',
  );
  return r.rows;
}

/**
 * claimDueRedeliveries on Citus: the customers with webhook work in turn order (work_queue), each
 * claimed on its own worker, oldest first, within the same per-customer limit. The turn order
 * moves when the scheduled attempts are claimed (claimEventsByTurns), not here.
 */
async function claimRedeliveriesByTurns(deps: Deps, opts: FairClaimOptions): Promise<ClaimedRedelivery[]> {
  await repairWorkQueue(deps.db, Date.now());
  const customers = [...new Set((await workTurns(deps.db, 'webhook')).map((t) => t.customerId))];
  const claimed: ClaimedRedelivery[] = [];
  for (const customerId of customers) {
    const room = opts.limit - claimed.length;
    if (room <= 0) break;
    const rows = await onReachableWorker(() => claimRedeliveriesOf(deps, opts, customerId, room));
    // Its worker did not answer: the next customer.
    if (rows === UNREACHABLE) continue;
    claimed.push(...rows);
  }
  return claimed;
}

/** Up to `room` queued redeliveries of one customer, within its limit, claimed on its worker. */
async function claimRedeliveriesOf(
  deps: Deps,
  opts: FairClaimOptions,
  customerId: number,
  room: number,
): Promise<ClaimedRedelivery[]> {
  const now = deps.clock.now();
  // The room first, then the claim (see claimEventsOf: no LIMIT from a subquery on Citus).
  const allowed = await deps.db.query<{ k: number }>(
    `select greatest(0, least($2::int, $3::int - ${runningOfCustomer('$4', '$1')}))::int as k`,
    [now, room, opts.perCustomer ?? PER_CUSTOMER_ATTEMPTS, customerId],
    'webhook_redelivery_room',
  );
  const k = allowed.rows[0]!.k;
  if (k <= 0) return [];
  return deps.db.transaction(async (tx) => {
    const picked = await tx.query<{ id: string }>(
      `select id from webhook_redeliveries where customer_id = $1 and state = 'queued'
        order by requested_at, id limit $2 for update skip locked`,
      [customerId, k],
      'webhook_redelivery_pick',
    );
    if (picked.rows.length === 0) return [];
    const r = await tx.query<ClaimedRedelivery>(
      `with c as (
         update webhook_redeliveries r set state = 'sending', locked_until = $2, started_at = $1
          where r.customer_id = $3 and r.id = any($4::text[])
         returning r.id, r.event_id
       )
       select c.id, c.event_id as "eventId", e.customer_id as "customerId", e.mode, e.job_id as "jobId",
              e.event, e.created_at as "createdAt"
         from c join webhook_events e on e.customer_id = $3 and e.id = c.event_id`,
      [now, new Date(now.getTime() + opts.leaseMs), customerId, picked.rows.map((p) => p.id)],
      'webhook_redelivery_claim_routed',
    );
    return r.rows;
  });
}
