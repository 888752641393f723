-- The customers that have work waiting, per kind and mode: a queued async job ('job'), a pending
-- webhook event or a queued redelivery ('webhook'). On Citus this table stays on the coordinator
-- and a claim reads it first, then claims on the one worker of the customer whose turn it is,
-- instead of looking for work on every worker (docs/running/citus.md#fair-claims-on-citus).
-- Written where the work is made (redeem_create_job, webhook_event_enqueue, a redelivery);
-- `version` moves on each write, so a claim that found a customer's work all gone removes its row
-- only when nothing was added since it looked. `last_turn`: when that customer's last claim was
-- (work_queue_turn), the round-robin order.
create table work_queue (
  kind text not null check (kind in ('job', 'webhook')),
  customer_id bigint not null,
  mode text not null,
  version bigint not null default 1,
  last_turn bigint,
  primary key (kind, customer_id, mode)
);

create sequence work_queue_turn;

insert into work_queue (kind, customer_id, mode)
select distinct 'job', customer_id, mode from jobs where status = 'queued';

insert into work_queue (kind, customer_id, mode)
select distinct 'webhook', customer_id, mode from webhook_events where state = 'pending'
on conflict do nothing;

insert into work_queue (kind, customer_id, mode)
select distinct 'webhook', e.customer_id, e.mode
  from webhook_redeliveries r join webhook_events e on e.customer_id = r.customer_id and e.id = r.event_id
 where r.state = 'queued'
on conflict do nothing;

-- The claim turns stay on the coordinator beside work_queue (every claim reads them across
-- customers: COORDINATOR_TABLES). Citus's online distribution refuses a
-- coordinator table's foreign key into a table it distributes, so theirs to customers goes: a
-- turn names a customer id only, and customers are never deleted.
alter table job_claim_turns drop constraint job_claim_turns_customer_id_fkey;
alter table webhook_claim_turns drop constraint webhook_claim_turns_customer_id_fkey;
