-- Retention (docs/reference/running.md#retention): a finished job older than RETENTION_DAYS keeps its row,
-- outcomes and billing, but its code ciphertexts are dropped (the sweeper's retention pass). What answers
-- still show of such a code (its last 4 characters, masked to its length) needs its length.
alter table job_codes alter column code_encrypted drop not null;
alter table job_codes add column code_length integer;
-- Stock codes a swept job consumed or deleted lose their ciphertext too; the keyed hash stays, so
-- such a code still cannot be imported again.
alter table stock_codes alter column code_encrypted drop not null;

-- When the sweep dropped the job's ciphertexts (null: not yet).
alter table jobs add column codes_dropped_at timestamptz;
-- The sweep's work list: finished jobs not swept yet, oldest first.
create index jobs_retention on jobs (finished_at)
  where codes_dropped_at is null and finished_at is not null;

-- Deleting old webhook events, oldest first (their attempts are found by the primary key).
create index webhook_events_created on webhook_events (created_at);
