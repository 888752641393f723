-- Enum-like columns as domains (issue 22). A table's CHECK constraint is read from its stored text
-- again by every statement that writes the table (PostgreSQL parses it for each statement's
-- executor), and an UPDATE checks all of them, also when it changes another column: every capture
-- of a job parsed its mode, status and source checks. A domain's check lives in PostgreSQL's type
-- cache and runs only where a value of the column is written. Same values allowed, same error
-- (23514); only the constraints' names change (api_mode_check, job_status_check, ...).
-- The tables a redeem writes (jobs, job_codes, idempotency_keys, accounts, stock_codes); the
-- others keep their checks (written rarely, and a parameter compared with text and assigned to
-- a domain column in one statement would no longer type: `inconsistent types deduced`).
-- No column gains a check it did not have.
create domain api_mode as text check (value in ('live', 'test'));
create domain job_status as text check (value in ('queued', 'running', 'completed', 'failed', 'interrupted'));
create domain job_source as text check (value in ('codes', 'stock'));
create domain job_code_state as text check (value in ('pending', 'sending', 'done'));
create domain code_settlement as text check (value in ('used', 'unused'));
create domain idempotency_state as text check (value in ('in_progress', 'done', 'released'));
create domain stock_state as text check (value in ('available', 'reserved', 'consumed', 'deleted', 'quarantined'));

-- A column named in a trigger's WHEN cannot change type: jobs_notify_queued is dropped here and
-- made again by src/db/functions/wake.sql, which the runner applies again after this migration in
-- the same transaction (its checksum is forgotten below).
drop trigger if exists jobs_notify_queued on jobs;

alter table accounts drop constraint accounts_mode_check, alter column mode type api_mode;
alter table stock_codes drop constraint stock_codes_mode_check, drop constraint stock_codes_state_check,
  alter column mode type api_mode, alter column state type stock_state;
alter table jobs drop constraint jobs_mode_check, drop constraint jobs_status_check, drop constraint jobs_source_check,
  alter column mode type api_mode, alter column status type job_status, alter column source type job_source;
alter table job_codes drop constraint job_codes_state_check, drop constraint job_codes_settlement_check,
  alter column state type job_code_state, alter column settlement type code_settlement;
alter table idempotency_keys drop constraint idempotency_keys_state_check, alter column state type idempotency_state;

do $$
begin
  if to_regclass('schema_functions') is not null then
    delete from schema_functions where name = 'wake.sql';
  end if;
end $$;
