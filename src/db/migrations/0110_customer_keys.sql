-- Every row of one customer carries its customer's id, and every key that must hold on one shard
-- names it: the shape a database sharded by customer needs (docs/running/citus.md), and the
-- same on one server. Ids made by the service (jobs, events, keys, …) are random and unique on
-- their own; the keys below put the customer first so that a key is checked where the customer's
-- rows are. Codes and attempts get the id of the job or event they belong to.

-- Foreign keys that point at the single-column keys go first, and come back customer-first.
alter table job_codes drop constraint job_codes_job_id_fkey;
alter table webhook_events drop constraint webhook_events_job_id_fkey;
alter table bot_redeems drop constraint bot_redeems_job_id_fkey;
alter table bot_redeems drop constraint bot_redeems_bot_user_id_fkey;
alter table webhook_attempts drop constraint webhook_attempts_event_id_fkey;
alter table webhook_redeliveries drop constraint webhook_redeliveries_event_id_fkey;
alter table bot_users drop constraint bot_users_link_id_fkey;
alter table topup_requests drop constraint topup_requests_bot_user_id_fkey;
alter table topup_payments drop constraint topup_payments_request_id_fkey;

-- The codes of a job, the attempts and redeliveries of an event: their customer's id.
alter table job_codes add column customer_id bigint;
update job_codes c set customer_id = j.customer_id from jobs j where j.id = c.job_id;
alter table job_codes alter column customer_id set not null;
alter table webhook_attempts add column customer_id bigint;
update webhook_attempts a set customer_id = e.customer_id from webhook_events e where e.id = a.event_id;
alter table webhook_attempts alter column customer_id set not null;
alter table webhook_redeliveries add column customer_id bigint;
update webhook_redeliveries r set customer_id = e.customer_id from webhook_events e where e.id = r.event_id;
alter table webhook_redeliveries alter column customer_id set not null;

-- Primary keys, customer first.
alter table jobs drop constraint jobs_pkey, add primary key (customer_id, id);
alter table job_codes drop constraint job_codes_pkey, add primary key (customer_id, job_id, position);
alter table webhook_events drop constraint webhook_events_pkey, add primary key (customer_id, id);
alter table webhook_attempts drop constraint webhook_attempts_pkey, add primary key (customer_id, event_id, attempt);
alter table webhook_redeliveries drop constraint webhook_redeliveries_pkey, add primary key (customer_id, id);
alter table api_keys drop constraint api_keys_pkey, add primary key (customer_id, id);
alter table wallet_ledger drop constraint wallet_ledger_pkey, add primary key (customer_id, id);
alter table stock_codes drop constraint stock_codes_pkey, add primary key (customer_id, id);
alter table bot_links drop constraint bot_links_pkey, add primary key (customer_id, id);
alter table bot_users drop constraint bot_users_pkey, add primary key (customer_id, id);
alter table bot_redeems drop constraint bot_redeems_pkey, add primary key (customer_id, id);
alter table topup_requests drop constraint topup_requests_pkey, add primary key (customer_id, id);

-- Lookups by an id alone (an operator's `jobs show`, a key's revoke) keep an index.
create index jobs_id on jobs (id);
create index job_codes_job on job_codes (job_id, position);
create index webhook_events_id on webhook_events (id);
create index webhook_attempts_event on webhook_attempts (event_id, attempt);
create index webhook_redeliveries_id on webhook_redeliveries (id);
create index api_keys_id on api_keys (id);
create index stock_codes_id on stock_codes (id);
create index bot_links_id on bot_links (id);
create index bot_users_id on bot_users (id);
create index bot_redeems_id on bot_redeems (id);
create index topup_requests_id on topup_requests (id);

-- Uniques within one customer: a key's hash, a link's token, an open redelivery of an event, a
-- code in flight.
alter table api_keys drop constraint api_keys_key_sha256_key, add unique (customer_id, key_sha256);
create index api_keys_sha256 on api_keys (key_sha256);
alter table bot_links drop constraint bot_links_token_hash_key, add unique (customer_id, token_hash);
-- A code in any stock is a duplicate for every other import too: the import looks across
-- customers under a lock on the code's hash (importStock); the key holds it within one.
alter table stock_codes drop constraint stock_codes_code_hash_key, add unique (customer_id, code_hash);
create index stock_codes_hash on stock_codes (code_hash);
create index bot_links_token on bot_links (token_hash);
-- A person is bound to one customer at a time: within one customer by this key, across customers
-- by the lock the binding takes on the person (bindWithToken).
drop index bot_users_bound;
create unique index bot_users_bound on bot_users (customer_id, telegram_user_id) where unbound_at is null;
create index bot_users_person on bot_users (telegram_user_id) where unbound_at is null;
drop index webhook_redeliveries_open;
create unique index webhook_redeliveries_open on webhook_redeliveries (customer_id, event_id) where state <> 'done';
drop index job_codes_in_flight;
create unique index job_codes_in_flight on job_codes (customer_id, code_hash) where state = 'sending';
create index job_codes_sending on job_codes (code_hash) where state = 'sending';

-- The foreign keys back, customer first.
alter table job_codes add foreign key (customer_id, job_id) references jobs (customer_id, id);
alter table webhook_events add foreign key (customer_id, job_id) references jobs (customer_id, id);
alter table bot_redeems add foreign key (customer_id, job_id) references jobs (customer_id, id);
alter table bot_redeems add foreign key (customer_id, bot_user_id) references bot_users (customer_id, id);
alter table webhook_attempts add foreign key (customer_id, event_id) references webhook_events (customer_id, id);
alter table webhook_redeliveries add foreign key (customer_id, event_id) references webhook_events (customer_id, id);
alter table bot_users add foreign key (customer_id, link_id) references bot_links (customer_id, id);
alter table topup_requests add foreign key (customer_id, bot_user_id) references bot_users (customer_id, id);
-- Payments are recorded per Telegram charge, on the coordinator when sharded (the payer may be
-- no customer's): recordPayment checks the request it credits; no key points into a shard.
alter table topup_payments drop constraint topup_payments_customer_id_fkey;
alter table topup_payments drop constraint topup_payments_payer_customer_id_fkey;
