-- Burst limit (docs/reference/limits.md#redeem-burst-limit): a sliding-window log per API key, shared by every process on
-- the database. One row per key holds the times (Unix milliseconds) of the requests it accepted
-- in the current window. Each take rewrites the row in one upsert, which locks it (serialising
-- takes of one key across processes), drops the times that left the window and appends the new
-- one if the window has room; so a row never holds more than 30 times and nothing needs sweeping.
-- `accepted` is the verdict of the latest take, returned by that same statement.
create table burst_windows (
  key_id text primary key,
  hits_ms bigint[] not null,
  accepted boolean not null
);
