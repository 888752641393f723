-- The event log's state kept with the event (docs/reference/webhooks-and-events.md#the-event-log): GET /v1/events?state=
-- derived every event's state of the customer (a lateral join over its redeliveries) before its
-- limit, so one tenant's filtered list read 50,000 events a request. The state the log shows
-- (pending, delivered, failed) is now a column, kept by triggers in the transaction of every
-- change to an event's schedule or to its redeliveries (src/db/functions/webhooks.sql), and a
-- filtered page is an index range like an unfiltered one.
alter table webhook_events add column log_state text not null default 'pending'
  check (log_state in ('pending', 'delivered', 'failed'));

-- The events written before: their state as the event log derived it before
-- this migration.
update webhook_events e
   set log_state = case
         when exists (select 1 from webhook_redeliveries d where d.event_id = e.id and d.state <> 'done')
           then 'pending'
         when e.state = 'delivered' or exists (
                select 1 from webhook_redeliveries d
                 where d.event_id = e.id and d.state = 'done' and d.error_class is null
                   and d.status between 200 and 299)
           then 'delivered'
         else 'failed' end
 where e.state <> 'pending';

create index webhook_events_owner_state on webhook_events (customer_id, mode, log_state, created_at desc, id desc);
