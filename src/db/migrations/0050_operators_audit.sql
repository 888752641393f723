-- Operators, the audit log and safe wallet operations (docs/reference/operators-and-audit.md).

-- Named operators. `root` is the bearer of ADMIN_TOKEN: its token lives in the configuration, not
-- here (token_sha256 is null), and it cannot be revoked. Every other operator's token is stored
-- only as its SHA-256 digest.
create table operators (
  id text primary key,
  name text not null unique,
  role text not null check (role in ('admin', 'viewer')),
  token_sha256 text unique,
  created_at timestamptz not null,
  revoked_at timestamptz
);
insert into operators (id, name, role, token_sha256, created_at)
values ('op_root', 'root', 'admin', null, now());

-- One row per successful admin change, written in the transaction of the change. `seq` orders
-- the rows and pages them; `id` is the public `aud_…` id.
create table audit_events (
  seq bigserial primary key,
  id text not null unique,
  at timestamptz not null,
  actor text not null,
  action text not null,
  customer_id bigint,
  target text,
  request_id text not null,
  ip text not null,
  details jsonb not null default '{}'
);
create index audit_events_customer on audit_events (customer_id, seq desc);
create index audit_events_actor on audit_events (actor, seq desc);
create index audit_events_action on audit_events (action, seq desc);

-- Append-only, whoever asks: the trigger that refuses update, delete and truncate is in
-- src/db/functions/audit.sql.

-- Idempotency-Key of the admin's wallet writes (top-up, adjust), scoped to the customer across
-- both modes. The row is inserted in the transaction that writes the entry: a concurrent request
-- with the same key waits on the primary key until that transaction ends, then finds the row
-- (replay or conflict), or takes the key itself when the first one rolled back.
create table admin_idempotency_keys (
  customer_id bigint not null references customers (id),
  key text not null,
  fingerprint text not null,
  response_status integer,
  response_body text,
  created_at timestamptz not null,
  primary key (customer_id, key)
);
