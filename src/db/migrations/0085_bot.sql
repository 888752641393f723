-- The chat bot (docs/reference/bot.md): who may use it (links and bound Telegram users), which update was
-- already acted on, the manual redeems waiting for their confirmation, the checker's daily count
-- and the one polling lease. A bot redeem is a job like any other, marked by its channel.

-- `api` for every job so far; `bot` for a manual redeem from the chat (no hold, no bill, no
-- webhook event). A domain, as the other enum-like columns of jobs (migration 0070), made
-- without its check first: a column with a constant default of a domain that has no constraint
-- is added without rewriting the table; the check added after only scans it (0070 says why).
create domain job_channel as text;
alter table jobs add column channel job_channel not null default 'api';
alter domain job_channel add constraint job_channel_check check (value in ('api', 'bot'));
-- At most one bot redeem per customer and mode runs at a time (docs/reference/bot.md#commands): the claim skips a queued
-- one while another runs, and this index makes it hold when two processes claim at once.
create unique index jobs_one_bot_running on jobs (customer_id, mode) where channel = 'bot' and status = 'running';

-- A single-use link the operator issues; the token itself is never stored, only its sha256.
create table bot_links (
  id text primary key,
  customer_id bigint not null references customers (id),
  role text not null check (role in ('owner', 'staff')),
  token_hash text not null unique,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  created_by text not null,
  used_at timestamptz,
  used_by bigint
);
create index bot_links_by_customer on bot_links (customer_id, created_at desc);

-- A Telegram user bound to one customer. Unbinding keeps the row (audit history) and frees the
-- Telegram user to be linked again.
create table bot_users (
  id text primary key,
  customer_id bigint not null references customers (id),
  telegram_user_id bigint not null,
  chat_id bigint not null,
  username text,
  role text not null check (role in ('owner', 'staff')),
  mode text not null default 'live' check (mode in ('live', 'test')),
  link_id text references bot_links (id),
  bound_at timestamptz not null,
  last_seen_at timestamptz,
  unbound_at timestamptz
);
create unique index bot_users_bound on bot_users (telegram_user_id) where unbound_at is null;
create index bot_users_by_customer on bot_users (customer_id, bound_at) where unbound_at is null;

-- Updates acted on, by Telegram's update_id, written in the transaction of the update's effect:
-- a redelivered update (polling after a crash, a webhook retried) finds its row and does nothing.
create table bot_updates (
  update_id bigint primary key,
  kind text not null,
  acted_at timestamptz not null
);
create index bot_updates_by_time on bot_updates (acted_at);

-- A manual redeem shown for confirmation, then started as a job (channel bot) by the first press
-- of Redeem. The caller's codes wait here encrypted (as job_codes keeps them) until the press;
-- they are dropped once the job holds them or the confirmation ends.
create table bot_redeems (
  id text primary key,
  customer_id bigint not null references customers (id),
  mode text not null check (mode in ('live', 'test')),
  telegram_user_id bigint not null,
  chat_id bigint not null,
  message_id bigint,
  player_id text not null,
  request jsonb,
  summary jsonb not null,
  state text not null check (state in ('confirming', 'cancelled', 'expired', 'started', 'finished')),
  job_id text references jobs (id),
  reported_done integer not null default 0,
  created_at timestamptz not null,
  decided_at timestamptz,
  finished_at timestamptz
);
create index bot_redeems_started on bot_redeems (created_at) where state = 'started';
create index bot_redeems_by_job on bot_redeems (job_id);

-- The checker's codes per customer and UTC day (BOT_CHECKS_PER_DAY).
create table bot_check_usage (
  customer_id bigint not null references customers (id),
  day date not null,
  checked integer not null,
  primary key (customer_id, day)
);

-- Which process polls Telegram now for a bot, until when (docs/reference/bot.md#running-the-bot).
create table bot_poll_lease (
  bot_id bigint primary key,
  owner text not null,
  expires_at timestamptz not null
);
