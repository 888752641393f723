-- The burst limit's take (takeBurstSlot explains the window): accepted and recorded when
-- fewer than p_limit requests of the key were accepted in (now - window, now]. The key's row
-- stays locked until the calling transaction ends. One row (ok, hits), so a PL/pgSQL caller
-- assigns it as an expression (`v := f(...)` runs as a simple expression, `select ... from f(...)`
-- as a whole query).
create or replace function burst_take(p_key text, p_now_ms bigint, p_window_ms bigint, p_limit bigint,
                           out ok boolean, out hits bigint[])
language plpgsql as $$
begin
  insert into burst_windows as w (key_id, hits_ms, accepted)
  values (p_key, array[p_now_ms], true)
  on conflict (key_id) do update set
    accepted = (select count(*) from unnest(w.hits_ms) h where h > p_now_ms - p_window_ms) < p_limit,
    hits_ms = array(select h from unnest(w.hits_ms) h where h > p_now_ms - p_window_ms order by h)
      || case
           when (select count(*) from unnest(w.hits_ms) h where h > p_now_ms - p_window_ms) < p_limit
           then array[p_now_ms]
           else '{}'::bigint[]
         end
  returning w.accepted, w.hits_ms into ok, hits;
end $$;
