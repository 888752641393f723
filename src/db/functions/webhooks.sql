-- The webhook wing.

-- The webhook outbox (enqueueJobEvent and job_finish_async write to it): an event row for a job, only when the customer
-- has a webhook registered for that mode, and never for a bot redeem (contract 14.4: the chat
-- is told instead). Returns whether one was written.
create or replace function webhook_event_enqueue(p_id text, p_customer bigint, p_mode text, p_job text, p_event text,
                                      p_now timestamptz) returns boolean
language plpgsql as $$
begin
  insert into webhook_events (id, customer_id, mode, job_id, event, created_at, next_attempt_at)
  select p_id, p_customer, p_mode, p_job, p_event, p_now, p_now
    from webhooks where customer_id = p_customer and mode = p_mode
     and not exists (select 1 from jobs where id = p_job and channel = 'bot');
  return found;
end $$;

-- The event log's state of an event (contract 13.6), kept in webhook_events.log_state (migration
-- 0081) so a list filtered by state reads an index range:
--   pending   an automatic attempt is still due (p_state 'pending'), or a redelivery is queued
--             or in flight;
--   delivered an attempt, automatic or a redelivery, got a 2xx;
--   failed    every automatic attempt used (dropped) and none got a 2xx.
create or replace function webhook_event_log_state(p_id text, p_state text) returns text
language plpgsql stable as $$
begin
  if p_state = 'pending' then
    return 'pending';
  end if;
  if exists (select 1 from webhook_redeliveries where event_id = p_id and state <> 'done') then
    return 'pending';
  end if;
  if p_state = 'delivered' or exists (
       select 1 from webhook_redeliveries
        where event_id = p_id and state = 'done' and error_class is null and status between 200 and 299) then
    return 'delivered';
  end if;
  return 'failed';
end $$;

-- An event's schedule changed (written, an attempt recorded, dropped): its log state with it.
create or replace function webhook_events_keep_log_state() returns trigger
language plpgsql as $$
begin
  new.log_state := webhook_event_log_state(new.id, new.state);
  return new;
end $$;

-- A redelivery queued, claimed or recorded (or closed by its lease): its event's log state.
create or replace function webhook_redeliveries_keep_log_state() returns trigger
language plpgsql as $$
begin
  update webhook_events e set log_state = webhook_event_log_state(e.id, e.state)
   where e.id = new.event_id and e.log_state is distinct from webhook_event_log_state(e.id, e.state);
  return null;
end $$;

-- Triggers live beside the function they call (as in wake.sql): in the transaction of the change.
create or replace trigger webhook_events_log_state before insert or update of state on webhook_events
for each row execute function webhook_events_keep_log_state();

create or replace trigger webhook_redeliveries_log_state after insert or update of state on webhook_redeliveries
for each row execute function webhook_redeliveries_keep_log_state();
