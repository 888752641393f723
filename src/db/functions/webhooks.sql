-- The webhook wing.

-- The webhook outbox (enqueueJobEvent and job_finish_async write to it): an event row for a job, only when the customer
-- has a webhook registered for that mode, and never for a bot redeem (docs/reference/bot.md#commands: the chat
-- is told instead). Returns whether one was written.
-- The event's customer_id is the webhook row's own column, not the argument: on Citus an
-- insert whose distribution column comes from elsewhere is run through the coordinator as a
-- copy, always a two-phase commit; from the row it selects, it runs on the customer's worker
-- (docs/running/citus.md#two-phase-commits).
create or replace function webhook_event_enqueue(p_id text, p_customer bigint, p_mode text, p_job text, p_event text,
                                      p_now timestamptz) returns boolean
language plpgsql as $$
declare
  v_done boolean;
begin
  insert into webhook_events (id, customer_id, mode, job_id, event, created_at, next_attempt_at)
  select p_id, w.customer_id, p_mode, p_job, p_event, p_now, p_now
    from webhooks w where w.customer_id = p_customer and w.mode = p_mode
     and not exists (select 1 from jobs j where j.customer_id = w.customer_id and j.id = p_job and j.channel = 'bot');
  if not found then
    return false;
  end if;
  v_done := work_queue_add('webhook', p_customer, p_mode);
  return true;
end $$;

-- A customer has work of a kind waiting (migration 0111): its row in work_queue, its version moved
-- on (a claim that is removing the row as empty then keeps it). And the processes' workers woken
-- (wake.sql): on Citus the wake-up triggers fire on the workers' shards, where no process
-- listens, so this notification, sent from the coordinator, is the one they hear
-- (docs/running/citus.md#wake-ups). On one server the trigger sends the same one, and PostgreSQL
-- delivers a transaction's identical notifications once.
create or replace function work_queue_add(p_kind text, p_customer bigint, p_mode text) returns boolean
language plpgsql as $$
begin
  insert into work_queue (kind, customer_id, mode) values (p_kind, p_customer, p_mode)
  on conflict (kind, customer_id, mode) do update set version = work_queue.version + 1;
  perform pg_notify(case p_kind when 'job' then 'redeem_job_queued' else 'redeem_webhook_event' end,
                    current_setting('application_name'));
  return true;
end $$;

-- The table a trigger reads or writes beside its own: itself on one server; on Citus, where the
-- trigger fires on a worker's shard (named like `webhook_events_102008`), the same customer's
-- shard of `p_table` on that worker (a shard group lives on one worker), found with Citus's
-- get_shard_id_for_distribution_column. A trigger there cannot read the distributed table.
create or replace function sibling_table(p_table text, p_trigger_table text, p_base text, p_customer bigint)
returns text
language plpgsql stable as $$
begin
  if p_trigger_table = p_base then
    return p_table;
  end if;
  return p_table || '_' || get_shard_id_for_distribution_column(p_table, p_customer);
end $$;

-- The event log's state of an event (docs/reference/webhooks-and-events.md#the-event-log), kept in webhook_events.log_state (migration
-- 0081) so a list filtered by state reads an index range:
--   pending   an automatic attempt is still due (p_state 'pending'), or a redelivery is queued
--             or in flight;
--   delivered an attempt, automatic or a redelivery, got a 2xx;
--   failed    every automatic attempt used (dropped) and none got a 2xx.
-- p_redeliveries: the table of redeliveries to read (sibling_table).
drop function if exists webhook_event_log_state(text, text);
create or replace function webhook_event_log_state(p_id text, p_state text, p_redeliveries text) returns text
language plpgsql stable as $$
declare
  v_open boolean;
  v_delivered boolean;
begin
  if p_state = 'pending' then
    return 'pending';
  end if;
  execute format('select exists (select 1 from %I where event_id = $1 and state <> ''done''),
                         exists (select 1 from %I where event_id = $1 and state = ''done'' and error_class is null
                                   and status between 200 and 299)', p_redeliveries, p_redeliveries)
    into v_open, v_delivered using p_id;
  if v_open then
    return 'pending';
  end if;
  if p_state = 'delivered' or v_delivered then
    return 'delivered';
  end if;
  return 'failed';
end $$;

-- An event's schedule changed (written, an attempt recorded, dropped): its log state with it.
create or replace function webhook_events_keep_log_state() returns trigger
language plpgsql as $$
begin
  new.log_state := webhook_event_log_state(new.id, new.state,
    sibling_table('webhook_redeliveries', tg_table_name, 'webhook_events', new.customer_id));
  return new;
end $$;

-- A redelivery queued, claimed or recorded (or closed by its lease): its event's log state.
create or replace function webhook_redeliveries_keep_log_state() returns trigger
language plpgsql as $$
declare
  v_events text := sibling_table('webhook_events', tg_table_name, 'webhook_redeliveries', new.customer_id);
  v_state text;
  v_log_state text;
begin
  execute format('select state, log_state from %I where id = $1', v_events) into v_state, v_log_state
    using new.event_id;
  if v_state is null then
    return null;
  end if;
  v_log_state := case when webhook_event_log_state(new.event_id, v_state, tg_table_name) is distinct from v_log_state
                      then webhook_event_log_state(new.event_id, v_state, tg_table_name) end;
  if v_log_state is not null then
    execute format('update %I set log_state = $2 where id = $1', v_events) using new.event_id, v_log_state;
  end if;
  return null;
end $$;

-- Triggers live beside the function they call (as in wake.sql): in the transaction of the change.
create or replace trigger webhook_events_log_state before insert or update of state on webhook_events
for each row execute function webhook_events_keep_log_state();

create or replace trigger webhook_redeliveries_log_state after insert or update of state on webhook_redeliveries
for each row execute function webhook_redeliveries_keep_log_state();
