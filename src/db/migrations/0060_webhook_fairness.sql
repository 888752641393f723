-- Webhook fair sharing (docs/reference/webhooks-and-events.md#fair-delivery): attempts are claimed round-robin across customers, at most
-- 4 of one customer at once, and a receiver that keeps failing is backed off
-- (the webhook worker's fair claim).

-- The claim's skip scan: one probe per (customer, mode) with pending events, then that
-- receiver's due events in due order.
create index webhook_events_pending_owner on webhook_events (customer_id, mode, next_attempt_at)
  where state = 'pending';
-- Attempts in flight (a lease not run out) per customer, counted by every process's claim.
create index webhook_events_leased on webhook_events (customer_id)
  where state = 'pending' and locked_until is not null;
-- Redeliveries being sent (counted by the same claim; the table keeps every past redelivery).
create index webhook_redeliveries_sending on webhook_redeliveries (event_id) where state = 'sending';

-- Round-robin between customers, as job_claim_turns (migration 0015) does for jobs: the customer
-- whose last claim is the oldest goes first (never claimed: first of all). A sequence number, not
-- a time, so it orders claims even where a clock stands still.
create sequence webhook_claim_turn;
create table webhook_claim_turns (
  customer_id bigint primary key references customers (id),
  last_turn bigint not null
);

-- A receiver's health (one webhook registration: customer and mode): consecutive failed
-- scheduled attempts, reset by a delivered one. While it is at or over the threshold the
-- receiver gets one attempt at a time instead of four; no event is dropped for it and no
-- automatic retry is used up by it (the events wait, their attempts untouched).
create table webhook_receiver_health (
  customer_id bigint not null references customers (id),
  mode text not null check (mode in ('live', 'test')),
  consecutive_failures integer not null default 0,
  last_failure_at timestamptz,
  primary key (customer_id, mode)
);
