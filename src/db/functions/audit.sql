-- The audit log (docs/reference/operators-and-audit.md#audit-log, written by recordAudit) is append-only, whoever asks: no code
-- path updates or deletes an audit row, and this refuses it from psql or a future bug too
-- (truncate included).
create or replace function audit_events_refuse_change() returns trigger
language plpgsql as $$
begin
  raise exception 'audit_events is append-only (% refused)', tg_op using errcode = '42501';
end $$;

create or replace trigger audit_events_no_update before update or delete on audit_events
for each row execute function audit_events_refuse_change();

create or replace trigger audit_events_no_truncate before truncate on audit_events
for each statement execute function audit_events_refuse_change();
