-- Usage per hour and day for the operator's console and GET /admin/v1/usage (the usage rollup).
-- Nothing here is written by the redeem hot path. usage_hourly is a rollup of finished jobs'
-- code outcomes (and usage_daily its sums per day), advanced by the usage rollup when usage is read (the admin API, off the hot path):
-- every job created before usage_rollup.rolled_until is finished and counted in both tables,
-- every later job is counted live from its rows. A job is rolled up once, when it and every
-- earlier job have finished, so a slow job delays the rollup but never makes it wrong.
create table usage_hourly (
  customer_id bigint not null,
  mode text not null,
  hour timestamptz not null,
  activated integer not null default 0,
  code_used integer not null default 0,
  invalid_code integer not null default 0,
  bad_player integer not null default 0,
  failed integer not null default 0,
  billed integer not null default 0,
  refunded integer not null default 0,
  primary key (customer_id, mode, hour)
);
-- All customers' hours in a range (the overview).
create index usage_hourly_hour on usage_hourly (hour);

-- The same counts per UTC day (`day` is its 00:00 UTC), kept beside the hours in the same
-- transactions: a 30-day overview of every customer then reads 30 rows per customer and mode,
-- not 720.
create table usage_daily (
  customer_id bigint not null,
  mode text not null,
  day timestamptz not null,
  activated integer not null default 0,
  code_used integer not null default 0,
  invalid_code integer not null default 0,
  bad_player integer not null default 0,
  failed integer not null default 0,
  billed integer not null default 0,
  refunded integer not null default 0,
  primary key (customer_id, mode, day)
);
create index usage_daily_day on usage_daily (day);

-- One row: the created_at watermark of the rollup (null until the first roll).
create table usage_rollup (
  id integer primary key check (id = 1),
  rolled_until timestamptz
);
insert into usage_rollup (id, rolled_until) values (1, null);

-- Jobs by time, newest first, for the operator's job list and for the rollup's live part; and by
-- customer then time (one index entry per job, none per code).
create index jobs_created on jobs (created_at, id);
create index jobs_customer_created on jobs (customer_id, created_at, id);
