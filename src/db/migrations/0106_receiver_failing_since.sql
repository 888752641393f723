-- When a receiver's current run of failures began (null while it delivers), so an operator reads
-- "failing since 09:12" beside the failures in a row. Runs under way before this migration start
-- at their last failure.
alter table webhook_receiver_health add column failing_since timestamptz;
update webhook_receiver_health set failing_since = last_failure_at where consecutive_failures > 0;
