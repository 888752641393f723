-- The redeem burst limit's windows (docs/reference/limits.md#redeem-burst-limit), one row per API
-- key, beside the key's customer: a table of the customer's like the key itself, so that on Citus
-- a redeem's phase 1 (redeem_start, a distributed function: docs/running/citus.md#distributed-functions)
-- takes the key's slot on the customer's worker, in the same call and commit. The other windows
-- (reads, webhook registrations, redeliveries, the bot's persons) stay in burst_windows.
-- Logged, unlike burst_windows (0065): Citus moves a customer's shards online by logical
-- replication, which cannot carry an unlogged table. A take is written in the redeem's own commit,
-- so it adds no log flush of its own there. The keys' windows in burst_windows are not carried
-- over: at most one window (10 s) starts afresh.
create table key_burst_windows (
  customer_id bigint not null,
  key_id text not null,
  hits_ms bigint[] not null,
  accepted boolean not null,
  primary key (customer_id, key_id)
);
delete from burst_windows where key_id like 'key\_%';
