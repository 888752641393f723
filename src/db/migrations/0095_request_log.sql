-- The request log (docs/operators/requests.md): one row per public API answer with status 400 or
-- above, written in batches off the request path. What a request was, never what it carried: no
-- body, key, code or query value. Bounded by the sweeper (REQUEST_LOG_RETENTION_DAYS) and by a
-- daily cap per customer and one for unidentified callers (request_log_days).
-- No foreign key to customers: a batch is one insert that must not wait on customer rows.
create table request_log (
  id bigint generated always as identity primary key,
  at timestamptz not null,
  customer_id bigint,
  key_prefix text,
  mode text check (mode in ('live', 'test')),
  method text not null,
  path text not null,
  status integer not null,
  error_code text,
  request_id text not null,
  ip text not null,
  duration_ms integer not null
);
create index request_log_by_time on request_log (at desc, id desc);
create index request_log_by_customer on request_log (customer_id, at desc, id desc);
create index request_log_by_request on request_log (request_id);

-- The rows each subject sent to be written on a UTC day (kept or refused by the cap: the rows kept
-- are the first `cap` of them): `subject` is the customer id as text, or `-` for unidentified
-- callers. A process stops sending a subject's rows once it has seen the cap itself that day.
create table request_log_days (
  subject text not null,
  day date not null,
  seen integer not null,
  primary key (subject, day)
);

-- Lookup by player (GET /admin/v1/jobs?player_id=, the console's search box).
create index jobs_by_player on jobs (player_id, created_at desc, id desc);
