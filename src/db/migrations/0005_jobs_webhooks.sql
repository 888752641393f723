-- Async jobs answer with the request id of the call that created them.
alter table jobs add column request_id text;
create index jobs_queued on jobs (created_at) where status = 'queued';

-- One webhook registration per customer and mode; the secret is encrypted at rest (it signs).
create table webhooks (
  customer_id bigint not null references customers (id),
  mode text not null check (mode in ('live', 'test')),
  url text not null,
  secret_encrypted text not null,
  created_at timestamptz not null,
  primary key (customer_id, mode)
);

-- The outbox: one row per event, written in the transaction that ends the job. The payload is
-- built from the job's rows at each attempt, so no code is ever stored in clear here.
create table webhook_events (
  id text primary key,
  customer_id bigint not null references customers (id),
  mode text not null,
  job_id text not null references jobs (id),
  event text not null check (event in ('redeem.completed', 'redeem.failed')),
  created_at timestamptz not null,
  state text not null default 'pending' check (state in ('pending', 'delivered', 'dropped')),
  attempts integer not null default 0,
  next_attempt_at timestamptz not null,
  locked_until timestamptz,
  last_status integer,
  last_error text,
  finished_at timestamptz
);
create index webhook_events_due on webhook_events (next_attempt_at) where state = 'pending';
create index webhook_events_job on webhook_events (job_id);

create table webhook_attempts (
  event_id text not null references webhook_events (id),
  attempt integer not null,
  url text not null,
  started_at timestamptz not null,
  status integer,
  error text,
  duration_ms integer not null,
  primary key (event_id, attempt)
);
