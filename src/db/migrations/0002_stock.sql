-- Merchants' stock of prepaid codes, per customer and mode. Codes are bearer value: only their
-- AES-256-GCM ciphertext, a keyed lookup hash and the last 4 characters (for logs) are stored.

create table stock_codes (
  id bigserial primary key,
  customer_id bigint not null references customers (id),
  mode text not null check (mode in ('live', 'test')),
  category text not null,
  uc integer not null check (uc > 0),
  -- HMAC-SHA256 under a key derived from CODE_ENCRYPTION_KEY: one code is in one stock only,
  -- across all customers, modes and states (a deleted or consumed code cannot be imported again).
  code_hash text not null unique,
  code_encrypted text not null,
  last4 text not null,
  state text not null default 'available'
    check (state in ('available', 'reserved', 'consumed', 'deleted', 'quarantined')),
  -- The job holding a reserved code (kept afterwards as a record of which job used it).
  reserved_by text,
  created_at timestamptz not null,
  updated_at timestamptz not null
);

-- Picking the oldest available codes of one customer, mode and category.
create index stock_codes_available on stock_codes (customer_id, mode, category, id)
  where state = 'available';

-- Stock counts per state and category.
create index stock_codes_counts on stock_codes (customer_id, mode, state, category);

-- Finding a job's codes (release or settle after a crash).
create index stock_codes_reserved_by on stock_codes (reserved_by) where reserved_by is not null;
