-- Who made a ledger entry and for which request (the next issue's operator audit needs both):
-- `actor` is the operator's name, or 'system' for the service's own entries (charges,
-- settlements); `request_id` the request that caused it, when known. Written only by the SQL
-- function ledger_append (src/db/functions/billing.sql).
alter table wallet_ledger add column actor text not null default 'system';
alter table wallet_ledger add column request_id text;
