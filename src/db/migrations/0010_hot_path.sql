-- The redeem hot path.
-- jobs_by_key served no query: a job's key is found from the job (finishSyncJob, recovery), by
-- the primary key of idempotency_keys. Every insert into jobs paid for it.
drop index if exists jobs_by_key;
