-- The window limits' take (takeWindowSlot explains the window): accepted and recorded when fewer
-- than p_limit requests of the subject were accepted in (now - window, now]. The subject's row
-- stays locked until the calling transaction ends. One row (ok, hits), so a PL/pgSQL caller
-- assigns it as an expression (`v := f(...)` runs as a simple expression, `select ... from f(...)`
-- as a whole query). burst_take keeps every subject's window in burst_windows; key_burst_take the
-- redeem burst limit's, per API key, in its customer's key_burst_windows.

-- The window after a take at p_now_ms: the times still in it, and this one when there is room.
-- Immutable (a function of its arguments), so Citus runs it on the worker's shard inside an
-- upsert (where it refuses a subquery); called once per column, two calls of a few microseconds.
create or replace function burst_window_after(p_hits bigint[], p_now_ms bigint, p_window_ms bigint, p_limit bigint,
                                              out ok boolean, out hits bigint[])
language plpgsql immutable as $$
begin
  hits := array(select h from unnest(p_hits) h where h > p_now_ms - p_window_ms order by h);
  ok := coalesce(array_length(hits, 1), 0) < p_limit;
  if ok then
    hits := hits || p_now_ms;
  end if;
end $$;

create or replace function burst_take(p_key text, p_now_ms bigint, p_window_ms bigint, p_limit bigint,
                           out ok boolean, out hits bigint[])
language plpgsql as $$
begin
  insert into burst_windows as w (key_id, hits_ms, accepted)
  values (p_key, array[p_now_ms], true)
  on conflict (key_id) do update set
    accepted = (burst_window_after(w.hits_ms, p_now_ms, p_window_ms, p_limit)).ok,
    hits_ms = (burst_window_after(w.hits_ms, p_now_ms, p_window_ms, p_limit)).hits
  returning w.accepted, w.hits_ms into ok, hits;
end $$;

create or replace function key_burst_take(p_customer bigint, p_key text, p_now_ms bigint, p_window_ms bigint,
                                          p_limit bigint, out ok boolean, out hits bigint[])
language plpgsql as $$
begin
  insert into key_burst_windows as w (customer_id, key_id, hits_ms, accepted)
  values (p_customer, p_key, array[p_now_ms], true)
  on conflict (customer_id, key_id) do update set
    accepted = (burst_window_after(w.hits_ms, p_now_ms, p_window_ms, p_limit)).ok,
    hits_ms = (burst_window_after(w.hits_ms, p_now_ms, p_window_ms, p_limit)).hits
  returning w.accepted, w.hits_ms into ok, hits;
end $$;
