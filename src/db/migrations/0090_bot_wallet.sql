-- The bot's wallet (docs/reference/bot.md#top-ups) and alerts (docs/reference/bot.md#alerts).

-- A live top-up asked for in the chat: paid with a Telegram invoice, or decided by an operator.
create table topup_requests (
  id text primary key,
  customer_id bigint not null references customers (id),
  mode text not null check (mode in ('live', 'test')),
  usd_micros bigint not null check (usd_micros > 0),
  state text not null check (state in ('pending', 'paid', 'approved', 'rejected', 'expired')),
  telegram_user_id bigint not null,
  chat_id bigint not null,
  created_at timestamptz not null,
  expires_at timestamptz not null,
  decided_at timestamptz,
  decided_by text,
  reason text
);
create index topup_requests_by_time on topup_requests (created_at desc, id desc);
create index topup_requests_pending on topup_requests (expires_at) where state = 'pending';

-- A Telegram payment credits the wallet once per telegram_payment_charge_id: its row is written
-- in the transaction of the ledger entry.
create table topup_payments (
  charge_id text primary key,
  provider_charge_id text,
  request_id text not null references topup_requests (id),
  ledger_entry bigint not null,
  created_at timestamptz not null
);

-- An owner's alert settings: the live balance threshold (null: that alert is off) and a switch
-- for all of them.
alter table bot_users add column alert_balance_micros bigint;
alter table bot_users add column alerts_off boolean not null default false;

-- Each alert condition's state, so it is sent once when it starts and again only after it cleared
-- (docs/reference/bot.md#alerts): one row per customer and condition (`balance:<bot user>`, `subscription_expiring`,
-- `subscription_expired`, `stock:<category>`), flipped by a conditional update that only one
-- process wins. `webhooks` keeps the time of the newest failed event already told.
create table bot_alert_states (
  customer_id bigint not null references customers (id),
  condition text not null,
  active boolean not null,
  mark timestamptz,
  changed_at timestamptz not null,
  primary key (customer_id, condition)
);
