-- Enum-like columns as domains. A table's CHECK constraint is read from its stored text
-- again by every statement that writes the table (PostgreSQL parses it for each statement's
-- executor), and an UPDATE checks all of them, also when it changes another column: every capture
-- of a job parsed its mode, status and source checks. A domain's check lives in PostgreSQL's type
-- cache and runs only where a value of the column is written. Same values allowed, same error
-- (23514); only the constraints' names change (api_mode_check, job_status_check, ...).
-- The tables a redeem writes (jobs, job_codes, idempotency_keys, accounts, stock_codes); the
-- others keep their checks (written rarely, and a parameter compared with text and assigned to
-- a domain column in one statement would no longer type: `inconsistent types deduced`).
-- No column gains a check it did not have.
-- Made without their checks first: a column changed to a domain that has a constraint is
-- rewritten whole, with every index, under the table's exclusive lock (3.2 s for 500,000 jobs and
-- their codes); to one without, nothing is rewritten but the partial indexes that name the column
-- (small: unfinished, queued and in-flight rows). The checks are added after, each checked by a
-- scan (0.5 s in all for the same rows).
create domain api_mode as text;
create domain job_status as text;
create domain job_source as text;
create domain job_code_state as text;
create domain code_settlement as text;
create domain idempotency_state as text;
create domain stock_state as text;

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

alter domain api_mode add constraint api_mode_check check (value in ('live', 'test'));
alter domain job_status add constraint job_status_check check (value in ('queued', 'running', 'completed', 'failed', 'interrupted'));
alter domain job_source add constraint job_source_check check (value in ('codes', 'stock'));
alter domain job_code_state add constraint job_code_state_check check (value in ('pending', 'sending', 'done'));
alter domain code_settlement add constraint code_settlement_check check (value in ('used', 'unused'));
alter domain idempotency_state add constraint idempotency_state_check check (value in ('in_progress', 'done', 'released'));
alter domain stock_state add constraint stock_state_check check (value in ('available', 'reserved', 'consumed', 'deleted', 'quarantined'));

do $$
begin
  if to_regclass('schema_functions') is not null then
    delete from schema_functions where name = 'wake.sql';
  end if;
end $$;
