-- The fair claim (docs/reference/jobs.md#fair-sharing, the jobs' claimJob) ranks each waiting customer by the
-- async jobs it has running in the workers. A sync redeem's job is `running` for the few
-- milliseconds of its one call and never in a worker, yet every one of them wrote an entry into
-- this index at its insert (one index entry of about fifteen per sync redeem). Now the
-- index holds the workers' running jobs only, and the claim counts those.
drop index jobs_running_by_customer;
create index jobs_running_by_customer on jobs (customer_id) where status = 'running' and is_async;
