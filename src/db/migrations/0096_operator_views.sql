-- The operator's views across customers.
-- The event log of every customer (GET /admin/v1/events?state=failed, the console's Webhooks
-- page): a page of one state is an index range that stops at its limit, as a customer's own
-- list is (webhook_events_owner_state, migration 0081).
create index webhook_events_state on webhook_events (log_state, created_at desc, id desc);

-- Money across customers per UTC day (GET /admin/v1/money, the overview's money plot): a range
-- of days of the ledger, whoever's entries they are.
create index wallet_ledger_created on wallet_ledger (created_at);
