-- Wake-ups across processes (startListener): the database notifies every listening process
-- when an async job is queued or a webhook event is written, whichever process wrote it, so an
-- idle worker elsewhere starts at once instead of at its next poll. NOTIFY is sent at commit, and
-- identical notifications of one transaction are sent once. The payload is the writing
-- connection's application_name, so a process can ignore its own writes (it wakes its workers
-- itself). The sync hot path notifies nothing.
-- The channel is the trigger's argument.
-- On Citus the trigger fires on a worker's shard (its table is named like `jobs_102008`), where no
-- process listens: it sends nothing there (work_queue_add, in webhooks.sql, wakes instead).
create or replace function notify_wake() returns trigger
language plpgsql as $$
begin
  if tg_table_name ~ '_[0-9]+$' then
    return null;
  end if;
  perform pg_notify(tg_argv[0], current_setting('application_name'));
  return null;
end $$;

-- Triggers live beside the function they call: the function files are applied after the
-- migrations, so a migration cannot create them. `create or replace trigger` (PostgreSQL 14+)
-- makes re-applying this file harmless.
-- An async job is inserted queued, a sync one running (redeem_create_job): the WHEN names
-- is_async, so the status column's type can change (migration 0070 made it a domain).
create or replace trigger jobs_notify_queued after insert on jobs
for each row when (new.is_async) execute function notify_wake('redeem_job_queued');

create or replace trigger webhook_events_notify after insert on webhook_events
for each statement execute function notify_wake('redeem_webhook_event');

-- A redelivery queued by any process wakes every webhook worker (docs/reference/webhooks-and-events.md#redelivery).
create or replace trigger webhook_redeliveries_notify after insert on webhook_redeliveries
for each statement execute function notify_wake('redeem_webhook_event');
