-- The webhook wing.

-- The webhook outbox (core/webhooks/events.ts): an event row for a job, only when the customer
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
