-- Redeems. Every redeem that takes an idempotency key is a job (sync ones are never shown as
-- jobs); its codes are rows of job_codes; its billing hold lives on the job row.

create table jobs (
  id text primary key,
  customer_id bigint not null references customers (id),
  mode text not null check (mode in ('live', 'test')),
  idempotency_key text not null,
  is_async boolean not null,
  status text not null check (status in ('queued', 'running', 'completed', 'failed', 'interrupted')),
  source text not null check (source in ('codes', 'stock')),
  player_id text not null,
  reference text,
  total integer not null,
  -- The billing hold, taken in phase 1: requests from the daily include and from the wallet,
  -- the per-request rate and the UTC day they count on; then what was captured or released.
  hold_day date not null,
  rate_micros bigint not null,
  hold_included integer not null,
  hold_wallet integer not null,
  captured_included integer not null default 0,
  captured_wallet integer not null default 0,
  released_included integer not null default 0,
  released_wallet integer not null default 0,
  result jsonb,
  error jsonb,
  lease_owner text,
  lease_expires_at timestamptz,
  created_at timestamptz not null,
  started_at timestamptz,
  finished_at timestamptz,
  check (captured_included + released_included <= hold_included),
  check (captured_wallet + released_wallet <= hold_wallet)
);
create index jobs_by_key on jobs (customer_id, mode, idempotency_key, created_at);
create index jobs_unfinished on jobs (lease_expires_at) where status in ('queued', 'running');

-- One row per code of a job, in request (or draw) order.
-- state: pending (not sent), sending (out with the upstream), done (outcome recorded).
create table job_codes (
  job_id text not null references jobs (id),
  position integer not null,
  code_hash text not null,
  code_encrypted text not null,
  last4 text not null,
  stock_id bigint,
  category text,
  uc integer,
  state text not null check (state in ('pending', 'sending', 'done')),
  status text,
  error_code text,
  disposition text,
  billed boolean,
  -- Copied from an earlier attempt of the same idempotency key: not sent, not billed again.
  reused boolean not null default false,
  started_at timestamptz,
  finished_at timestamptz,
  primary key (job_id, position)
);
-- The same code is never out with the upstream twice at once.
create unique index job_codes_in_flight on job_codes (code_hash) where state = 'sending';

create table idempotency_keys (
  customer_id bigint not null,
  mode text not null,
  key text not null,
  fingerprint text not null,
  state text not null check (state in ('in_progress', 'done', 'released')),
  job_id text,
  response_status integer,
  response_body jsonb,
  response_request_id text,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  primary key (customer_id, mode, key)
);
create index idempotency_keys_expiry on idempotency_keys (expires_at);

-- The sandbox activator's own memory (docs/reference/redeem.md#activators): codes it has activated, per mode.
create table sandbox_redemptions (
  mode text not null,
  code_hash text not null,
  player_id text not null,
  created_at timestamptz not null,
  primary key (mode, code_hash)
);
