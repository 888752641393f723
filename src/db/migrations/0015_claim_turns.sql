-- Round-robin between customers (docs/reference/jobs.md#fair-sharing). A claim ranks live before test, then the
-- customer with the fewest jobs running, then the customer whose last claim is the oldest (this
-- table; never claimed comes first), then the oldest job. Without the third key, a customer whose
-- jobs had all just finished tied with one that had been waiting, and won on its older job: a
-- flood took two turns in a row while another customer's job waited (test/jobs/fair-sharing.test.ts).
-- A turn is a sequence number, not a time: it orders claims even where a clock stands still.
create sequence job_claim_turn;
create table job_claim_turns (
  customer_id bigint primary key references customers (id),
  last_turn bigint not null
);
