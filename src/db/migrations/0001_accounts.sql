-- Customers, their plan and bot subscription, API keys, and per-mode money and usage.
-- Money is integer micro-dollars (1 USD = 1,000,000) everywhere.

create table customers (
  id bigserial primary key,
  name text not null,
  disabled_at timestamptz,
  subscription_required boolean not null default false,
  subscription_expires_at timestamptz,
  created_at timestamptz not null
);

-- One plan per customer (none until the operator assigns one); it applies to each mode on its own.
create table plans (
  customer_id bigint primary key references customers (id),
  label text not null,
  daily_limit integer check (daily_limit is null or daily_limit >= 0),
  per_request_micros bigint not null check (per_request_micros >= 0),
  overage boolean not null,
  active boolean not null,
  updated_at timestamptz not null
);

create table api_keys (
  id text primary key,
  customer_id bigint not null references customers (id),
  mode text not null check (mode in ('live', 'test')),
  key_sha256 text not null unique,
  key_prefix text not null,
  scopes text[] not null,
  allowed_ips text[] not null default '{}',
  expires_at timestamptz,
  revoked_at timestamptz,
  label text not null default '',
  created_at timestamptz not null
);
create index api_keys_customer on api_keys (customer_id);

-- One row per customer and mode: the lock that serialises billing decisions, plus cached sums
-- (balance = sum of the ledger; held = open wallet holds) kept in the same transactions.
create table accounts (
  customer_id bigint not null references customers (id),
  mode text not null check (mode in ('live', 'test')),
  balance_micros bigint not null default 0,
  held_micros bigint not null default 0 check (held_micros >= 0),
  primary key (customer_id, mode)
);

-- Append-only wallet ledger: top-ups are positive, captured charges negative.
create table wallet_ledger (
  id bigserial primary key,
  customer_id bigint not null,
  mode text not null,
  amount_micros bigint not null,
  balance_after_micros bigint not null,
  kind text not null,
  note text not null default '',
  reference text,
  created_at timestamptz not null,
  foreign key (customer_id, mode) references accounts (customer_id, mode)
);
create index wallet_ledger_account on wallet_ledger (customer_id, mode, id desc);

-- Requests held or billed per UTC day (used), and of those the ones on the wallet (overage).
create table daily_usage (
  customer_id bigint not null,
  mode text not null,
  day date not null,
  used integer not null default 0 check (used >= 0),
  overage integer not null default 0 check (overage >= 0),
  primary key (customer_id, mode, day)
);
