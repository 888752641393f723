-- The operator's event log across customers (issue 36: GET /admin/v1/events?state=failed, the
-- console's Webhooks page): a page of one state of every customer is an index range that stops
-- at its limit, as a customer's own list is (webhook_events_owner_state, migration 0081).
create index webhook_events_state on webhook_events (log_state, created_at desc, id desc);
