-- Encryption key rotation (docs/reference/operators-and-audit.md#encryption-key-rotation): whether a rotation is running, shared by every process
-- on the database, so a rotation started through one process is carried out by any (each row is
-- rewritten under the first key of the keyring by whichever process takes it, FOR UPDATE SKIP
-- LOCKED), and resumes after a restart or a kill. One row, made by the first rotation.
create table encryption_rotation (
  id boolean primary key default true check (id),
  state text not null check (state in ('idle', 'running')),
  -- The key id the rotation rewrites under (the first key of the starting process's keyring).
  target_key_id text not null,
  started_at timestamptz not null,
  finished_at timestamptz,
  rows_rewritten bigint not null default 0
);
