-- Fewer statements inside the redeem functions of 0011 (issue 10), same rules:
-- - PL/pgSQL runs `x := f(...)` as a simple expression, but `perform f(...)` and
--   `select ... from f(...)` as whole queries: the helpers are called as expressions, which needs
--   account_lock to return a value and burst_take to return one row instead of a set;
-- - finishing a sync job changes the job and its key in one statement (a data-modifying WITH),
--   with the answer's status computed by its caller from the same scan of the job's codes that
--   tells whether the job is done (was three scans).
-- Measured with the redeem's SQL alone under pgbench (bench/pgbench.ts sqlRedeemTps): no change
-- in CPU per redeem beyond noise; kept because it does less (bench/README.md).

-- Returns true, so callers take the lock as an expression (`v := account_lock(...)`).
drop function account_lock(bigint, text);
create function account_lock(p_customer bigint, p_mode text) returns boolean
language plpgsql as $$
begin
  perform 1 from accounts where customer_id = p_customer and mode = p_mode for update;
  if not found then
    insert into accounts (customer_id, mode) values (p_customer, p_mode) on conflict do nothing;
    perform 1 from accounts where customer_id = p_customer and mode = p_mode for update;
  end if;
  return true;
end $$;

-- One row (ok, hits), so a PL/pgSQL caller assigns it as an expression.
drop function burst_take(text, bigint, bigint, bigint);
create function burst_take(p_key text, p_now_ms bigint, p_window_ms bigint, p_limit bigint,
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

create or replace function billing_release_one(p_job text) returns void
language plpgsql as $$
declare
  j record;
  v_from_wallet boolean;
  v_locked boolean;
begin
  select customer_id, mode, hold_day, rate_micros,
         hold_included - captured_included - released_included as open_included,
         hold_wallet - captured_wallet - released_wallet as open_wallet
    into j from jobs where id = p_job for update;
  if not found then
    raise exception 'job % not found', p_job;
  end if;
  v_from_wallet := j.open_wallet > 0;
  if not v_from_wallet and j.open_included <= 0 then
    raise exception 'job % has no open hold to release', p_job;
  end if;
  -- The account row before daily_usage, as every billing path takes them (phase 1 holds the
  -- account while it adds to daily_usage): the other order deadlocks.
  v_locked := account_lock(j.customer_id, j.mode);
  if v_from_wallet then
    update jobs set released_wallet = released_wallet + 1 where id = p_job;
  else
    update jobs set released_included = released_included + 1 where id = p_job;
  end if;
  update daily_usage set used = used - 1, overage = overage - (case when v_from_wallet then 1 else 0 end)
   where customer_id = j.customer_id and mode = j.mode and day = j.hold_day;
  if v_from_wallet and j.rate_micros > 0 then
    update accounts set held_micros = held_micros - j.rate_micros
     where customer_id = j.customer_id and mode = j.mode;
  end if;
end $$;

-- Finishes a sync job still run by p_owner, its key answering p_status (200 when a code was
-- activated, else 422; the caller knows from its scan of the codes): the job and its key in one
-- statement. Returns p_status, or null when the job is no longer ours (recovery took it over and
-- released its key).
create function job_finish_sync_as(p_job text, p_now timestamptz, p_owner text, p_customer bigint, p_mode text,
                                   p_request_id text, p_status integer) returns integer
language plpgsql as $$
declare
  v_finished integer;
begin
  with j as (
    update jobs set status = 'completed', finished_at = p_now, lease_owner = null
     where id = p_job and status = 'running' and lease_owner = p_owner and customer_id = p_customer and mode = p_mode
    returning idempotency_key
  ), k as (
    update idempotency_keys k set state = 'done', response_status = p_status, response_request_id = p_request_id
      from j
     where k.customer_id = p_customer and k.mode = p_mode and k.key = j.idempotency_key and k.job_id = p_job
  )
  select count(*) into v_finished from j;
  return case when v_finished > 0 then p_status end;
end $$;

create or replace function job_finish_sync(p_job text, p_now timestamptz, p_owner text, p_customer bigint, p_mode text,
                                           p_request_id text) returns integer
language plpgsql as $$
begin
  return job_finish_sync_as(p_job, p_now, p_owner, p_customer, p_mode, p_request_id,
    case when exists (select 1 from job_codes where job_id = p_job and state = 'done' and status = 'activated')
         then 200 else 422 end);
end $$;

create or replace function job_finish_async(p_job text, p_now timestamptz, p_owner text, p_event_id text) returns boolean
language plpgsql as $$
declare
  v_customer bigint;
  v_mode text;
  v_enqueued boolean;
begin
  update jobs set status = 'completed', finished_at = p_now, lease_owner = null
   where id = p_job and status = 'running' and lease_owner = p_owner
  returning customer_id, mode into v_customer, v_mode;
  if not found then
    return false;
  end if;
  v_enqueued := webhook_event_enqueue(p_event_id, v_customer, v_mode, p_job, 'redeem.completed', p_now);
  return true;
end $$;

create or replace function redeem_begin(p jsonb) returns jsonb
language plpgsql as $$
declare
  v_customer bigint := (p->>'customer_id')::bigint;
  v_mode text := p->>'mode';
  v_hits bigint[];
  v_burst record;
  v_locked boolean;
  k record;
  v_job record;
begin
  if coalesce((p->>'check_key')::boolean, false) then
    perform 1 from api_keys ak join customers c on c.id = ak.customer_id
     where ak.id = p->>'key_id' and ak.revoked_at is null and c.disabled_at is null;
    if not found then
      return jsonb_build_object('kind', 'recheck');
    end if;
  end if;
  if coalesce((p->>'burst')::boolean, false) then
    v_burst := burst_take(p->>'key_id', (p->>'now_ms')::bigint, (p->>'window_ms')::bigint, (p->>'limit')::bigint);
    v_hits := v_burst.hits;
    if not v_burst.ok then
      return jsonb_build_object('kind', 'rate_limited', 'hits', v_hits);
    end if;
  end if;
  v_locked := account_lock(v_customer, v_mode);
  select fingerprint, state, job_id, response_status, response_request_id into k
    from idempotency_keys
   where customer_id = v_customer and mode = v_mode and key = p->>'idempotency_key'
     and expires_at > (p->>'now')::timestamptz;
  if not found then
    return jsonb_build_object('kind', 'new', 'previous', null, 'hits', v_hits);
  end if;
  if k.fingerprint <> p->>'fingerprint' then
    return jsonb_build_object('kind', 'conflict', 'hits', v_hits);
  end if;
  if k.state = 'in_progress' then
    return jsonb_build_object('kind', 'in_progress', 'hits', v_hits);
  end if;
  if k.state = 'done' then
    select is_async, status into v_job from jobs where id = k.job_id;
    if v_job.is_async and v_job.status = 'interrupted' then
      return jsonb_build_object('kind', 'interrupted', 'job_id', k.job_id, 'hits', v_hits);
    end if;
    return jsonb_build_object('kind', 'replay', 'job_id', k.job_id, 'status', k.response_status,
                              'request_id', k.response_request_id, 'hits', v_hits);
  end if;
  -- Released after a 5xx: resume, reusing every outcome already recorded.
  return jsonb_build_object('kind', 'new', 'previous', k.job_id, 'hits', v_hits);
end $$;

create or replace function redeem_record_outcome(p jsonb) returns jsonb
language plpgsql as $$
declare
  v_job text := p->>'job_id';
  v_now timestamptz := (p->>'now')::timestamptz;
  v_stock bigint;
  v_wallet bigint := 0;
  v_moved integer;
  v_all_done boolean;
  v_activated boolean;
  v_status integer;
  v_result jsonb;
begin
  update job_codes
     set state = 'done', status = p->>'status', error_code = p->>'error_code', disposition = p->>'disposition',
         billed = (p->>'billed')::boolean, category = coalesce(category, p->>'category'),
         uc = coalesce(uc, (p->>'uc')::integer), finished_at = v_now
   where job_id = v_job and position = (p->>'position')::integer and state = p->>'from_state'
  returning stock_id into v_stock;
  if not found then
    return jsonb_build_object('recorded', false);
  end if;
  if (p->>'billed')::boolean then
    v_wallet := billing_capture_one(v_job, v_now);
  else
    perform billing_release_one(v_job);
  end if;
  if v_stock is not null then
    v_moved := stock_set_state(array[v_stock], p->>'stock_state', v_now);
  end if;
  v_result := jsonb_build_object('recorded', true, 'wallet_micros', v_wallet);
  if coalesce((p->>'finish')::boolean, false) then
    -- One scan of the job's codes: all done (this was the last), and whether one was activated.
    select bool_and(state = 'done'), coalesce(bool_or(state = 'done' and status = 'activated'), false)
      into v_all_done, v_activated
      from job_codes where job_id = v_job;
    if v_all_done then
      v_status := job_finish_sync_as(v_job, v_now, p->>'owner', (p->>'customer_id')::bigint, p->>'mode',
                                     p->>'request_id', case when v_activated then 200 else 422 end);
      if v_status is not null then
        return v_result || jsonb_build_object(
          'finished', v_status,
          'codes', job_codes_json(v_job),
          'account', account_state((p->>'customer_id')::bigint, p->>'mode', (p->>'day')::date));
      end if;
    end if;
  end if;
  -- Codes still to record: the job stays ours a while longer (a finished job needs no lease).
  update jobs set lease_expires_at = greatest(lease_expires_at, (p->>'lease_until')::timestamptz) where id = v_job;
  return v_result;
end $$;
