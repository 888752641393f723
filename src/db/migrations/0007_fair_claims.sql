-- Fair job claims (docs/reference/jobs.md#fair-sharing): the oldest queued job of each customer and mode, found without
-- reading the whole queue (a skip scan over the first index: one probe per customer waiting), and
-- each waiting customer's running jobs counted from the second (small: running jobs only).
create index jobs_queued_by_customer on jobs (mode, customer_id, created_at, id) where status = 'queued';
create index jobs_running_by_customer on jobs (customer_id) where status = 'running';
