-- The sliding windows of every limit (burst, reads, webhook registrations, redeliveries:
-- docs/reference/limits.md) are kept out of the write-ahead log: a take then costs its row's update and no log
-- flush of its own, which is what lets a read count itself inside the statement that answers it
-- (GET /v1/me, GET /v1/jobs/{id}) without making every read a durable write. What a crash of the
-- database loses is only the windows' recent times (PostgreSQL empties an unlogged table after a
-- crash, and a promoted standby starts with it empty): every limit starts afresh, at most one
-- window (10 s, or 60 s for webhook registrations) more lenient once. Nothing of money or codes
-- is here.
alter table burst_windows set unlogged;
