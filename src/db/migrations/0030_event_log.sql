-- The merchant's webhook event log (docs/reference/webhooks-and-events.md#the-event-log): attempts keep their error class, events are
-- listed per customer and mode newest first, and a redelivery is a queued row of its own.

-- The class of a failed attempt (timeout, connection, tls, blocked, http_status); null when the
-- attempt got a 2xx. Rows written before this migration have none: the event log derives it
-- from `status` and `error` (the webhook worker's attempt errors).
alter table webhook_attempts add column error_class text
  check (error_class in ('timeout', 'connection', 'tls', 'blocked', 'http_status'));

-- GET /v1/events: one customer and mode, newest first, keyset-paged on (created_at, id).
create index webhook_events_owner on webhook_events (customer_id, mode, created_at desc, id desc);

-- A redelivery (POST /v1/events/{id}/redeliver): one extra attempt, queued by the request in
-- its own committed row and sent by the webhook worker (its redelivery loop). It never
-- touches webhook_events' schedule (attempts, next_attempt_at, state). Its life:
-- queued -> sending (claimed with a lease) -> done (the attempt's result recorded here).
create table webhook_redeliveries (
  id text primary key,
  event_id text not null references webhook_events (id),
  requested_at timestamptz not null,
  -- 'merchant' (the public API) or an operator's name.
  requested_by text not null,
  state text not null default 'queued' check (state in ('queued', 'sending', 'done')),
  locked_until timestamptz,
  started_at timestamptz,
  url text,
  status integer,
  error_class text check (error_class in ('timeout', 'connection', 'tls', 'blocked', 'http_status')),
  error text,
  duration_ms integer
);
-- At most one redelivery of an event in flight: a second request is 409 conflict.
create unique index webhook_redeliveries_open on webhook_redeliveries (event_id) where state <> 'done';
create index webhook_redeliveries_event on webhook_redeliveries (event_id);
create index webhook_redeliveries_due on webhook_redeliveries (requested_at) where state = 'queued';

-- Another process's worker wakes at once: the trigger is in src/db/functions/wake.sql.
