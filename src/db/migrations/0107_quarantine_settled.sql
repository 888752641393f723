-- The quarantine page keeps settled codes for a while (QUARANTINE_SETTLED_DAYS in
-- core/billing/quarantine.ts) with how they settled: `settled_by` says what settled it (the
-- status check or an operator's word), `settled_actor` who (the operator who settled it or ran
-- the check; null for the automatic check). Codes settled before this migration have no actor.
alter table job_codes add column settled_actor text;
-- The recently settled codes, newest first: a range of a small partial index.
create index job_codes_quarantine_settled on job_codes (settled_at desc)
  where disposition = 'quarantined' and settled_at is not null;
