-- Settling quarantined codes: a status check (in the background, or asked by the operator) or the
-- operator's own word decides whether the upstream consumed the code. The outcome the caller was
-- answered stays as recorded (replays never change); the settlement is kept beside it.
alter table job_codes add column settlement text check (settlement in ('used', 'unused'));
alter table job_codes add column settled_at timestamptz;
alter table job_codes add column settled_by text;
alter table job_codes add column check_attempts integer not null default 0;
alter table job_codes add column next_check_at timestamptz;
create index job_codes_quarantined on job_codes (finished_at) where disposition = 'quarantined' and settled_at is null;
