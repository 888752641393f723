-- The redeem hot path as SQL functions (DESIGN house style 4, issue 10). A crash-safe sync redeem
-- needs two durable commits: one that marks its codes `sending` before the activator is called,
-- one that records the outcome with its capture or release and finishes the job and its key.
-- Each is one statement calling one function below, so one round trip. Each money rule (hold,
-- capture, release, stock state, finishing a job and its key) exists here once; the TypeScript
-- wrappers beside their tables (core/billing.ts, core/stock.ts, core/idempotency-keys.ts,
-- core/job-states.ts) and every caller (redeem, recovery, quarantine) use them.
--
-- Business time comes from the caller (the service's clock), never from now(): tests move it.
-- Every function is PL/pgSQL, also the one-query ones: PostgreSQL plans a SQL-language function's
-- query again on every call it does not inline, while PL/pgSQL keeps its plans per connection.
-- Lock order, as before: the account row, then the job row (or daily_usage, stock rows).

-- The billing lock of a customer and mode: the account row, made when missing.
create function account_lock(p_customer bigint, p_mode text) returns void
language plpgsql as $$
begin
  perform 1 from accounts where customer_id = p_customer and mode = p_mode for update;
  if not found then
    insert into accounts (customer_id, mode) values (p_customer, p_mode) on conflict do nothing;
    perform 1 from accounts where customer_id = p_customer and mode = p_mode for update;
  end if;
end $$;

-- What billing and the quota headers need about one customer in one mode on one day, as the
-- camelCase fields of core/accounts.ts AccountRow. Null for no such customer.
create function account_state(p_customer bigint, p_mode text, p_day date) returns jsonb
language plpgsql stable as $$
begin
  return (
    select jsonb_build_object(
             'disabled', c.disabled_at is not null,
             'subRequired', c.subscription_required,
             'subExpiresAt', c.subscription_expires_at,
             'label', p.label, 'dailyLimit', p.daily_limit, 'perRequestMicros', p.per_request_micros,
             'overage', p.overage, 'active', p.active,
             'balanceMicros', coalesce(a.balance_micros, 0), 'heldMicros', coalesce(a.held_micros, 0),
             'usedToday', coalesce(u.used, 0), 'overageToday', coalesce(u.overage, 0))
      from customers c
      left join plans p on p.customer_id = c.id
      left join accounts a on a.customer_id = c.id and a.mode = p_mode
      left join daily_usage u on u.customer_id = c.id and u.mode = p_mode and u.day = p_day
     where c.id = p_customer);
end $$;

-- Step 12 of contract section 3 (billing, section 2), under the account lock: decides how
-- p_requests are held (the daily include first, then the wallet) and records the hold, returning
-- it with the account after it, or returns the refusal ({"refusal": error_code, ...}, with the
-- account as read) having written nothing.
create function billing_hold(p_customer bigint, p_mode text, p_now timestamptz, p_day date, p_requests integer)
returns jsonb
language plpgsql as $$
declare
  s jsonb := account_state(p_customer, p_mode, p_day);
  v_limit integer;
  v_rate bigint;
  v_remaining integer;
  v_included integer;
  v_wallet integer;
begin
  if s is null then
    return jsonb_build_object('refusal', 'unknown_customer');
  end if;
  if s->>'label' is null or not (s->>'active')::boolean then
    return jsonb_build_object('refusal', 'no_plan', 'account', s);
  end if;
  if (s->>'subRequired')::boolean and s->>'subExpiresAt' is not null
     and (s->>'subExpiresAt')::timestamptz <= p_now then
    return jsonb_build_object('refusal', 'subscription_expired', 'subExpiresAt', s->'subExpiresAt', 'account', s);
  end if;
  v_limit := (s->>'dailyLimit')::integer;
  v_rate := (s->>'perRequestMicros')::bigint;
  -- An uncapped plan has no include: every request goes to the wallet.
  v_remaining := case when v_limit is null then 0
                      else greatest(0, v_limit - ((s->>'usedToday')::integer - (s->>'overageToday')::integer)) end;
  v_included := least(p_requests, v_remaining);
  v_wallet := p_requests - v_included;
  if v_wallet > 0 then
    if v_limit is not null and not (s->>'overage')::boolean then
      return jsonb_build_object('refusal', 'quota_exceeded', 'account', s);
    end if;
    if (s->>'balanceMicros')::bigint - (s->>'heldMicros')::bigint < v_wallet * v_rate then
      return jsonb_build_object('refusal', 'insufficient_funds', 'account', s);
    end if;
  end if;
  if p_requests > 0 then
    insert into daily_usage (customer_id, mode, day, used, overage) values (p_customer, p_mode, p_day, p_requests, v_wallet)
    on conflict (customer_id, mode, day) do update
      set used = daily_usage.used + excluded.used, overage = daily_usage.overage + excluded.overage;
  end if;
  -- A free plan's wallet requests hold nothing: no write that changes nothing.
  if v_wallet > 0 and v_rate > 0 then
    update accounts set held_micros = held_micros + v_wallet * v_rate
     where customer_id = p_customer and mode = p_mode;
  end if;
  -- The account after the hold (for the quota headers), without reading it again.
  return jsonb_build_object('day', p_day, 'rate', v_rate, 'included', v_included, 'wallet', v_wallet,
    'account', s || jsonb_build_object(
      'usedToday', (s->>'usedToday')::integer + p_requests,
      'overageToday', (s->>'overageToday')::integer + v_wallet,
      'heldMicros', (s->>'heldMicros')::bigint + v_wallet * v_rate));
end $$;

-- Bills one held request of a job: from the include while any is open, else from the wallet
-- (ledger entry and balance together, the hold let go in the same step). Returns the
-- micro-dollars taken from the wallet (0 for an included or a $0 request).
create function billing_capture_one(p_job text, p_now timestamptz) returns bigint
language plpgsql as $$
declare
  j record;
  v_balance bigint;
begin
  select customer_id, mode, rate_micros,
         hold_included - captured_included - released_included as open_included,
         hold_wallet - captured_wallet - released_wallet as open_wallet
    into j from jobs where id = p_job for update;
  if not found then
    raise exception 'job % not found', p_job;
  end if;
  if j.open_included > 0 then
    update jobs set captured_included = captured_included + 1 where id = p_job;
    return 0;
  end if;
  if j.open_wallet <= 0 then
    raise exception 'job % has no open hold to capture', p_job;
  end if;
  update jobs set captured_wallet = captured_wallet + 1 where id = p_job;
  -- A $0 request moves no money: no balance update, no ledger row of 0.
  if j.rate_micros = 0 then
    return 0;
  end if;
  update accounts set balance_micros = balance_micros - j.rate_micros, held_micros = held_micros - j.rate_micros
   where customer_id = j.customer_id and mode = j.mode
  returning balance_micros into v_balance;
  insert into wallet_ledger (customer_id, mode, amount_micros, balance_after_micros, kind, note, reference, created_at)
  values (j.customer_id, j.mode, -j.rate_micros, v_balance, 'charge', 'redeem request', p_job, p_now);
  return j.rate_micros;
end $$;

-- Refunds one held request of a job: a wallet one while any is open, else an included one.
create function billing_release_one(p_job text) returns void
language plpgsql as $$
declare
  j record;
  v_from_wallet boolean;
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
  perform account_lock(j.customer_id, j.mode);
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

-- Moves stock codes to a state; back to `available` they are no longer anyone's reservation.
create function stock_set_state(p_ids bigint[], p_state text, p_now timestamptz) returns integer
language plpgsql as $$
declare
  v_moved integer;
begin
  update stock_codes
     set state = p_state, updated_at = p_now,
         reserved_by = case when p_state = 'available' then null else reserved_by end
   where id = any(p_ids);
  get diagnostics v_moved = row_count;
  return v_moved;
end $$;

-- The burst limit's take (core/burst-limit.ts explains the window): accepted and recorded when
-- fewer than p_limit requests of the key were accepted in (now - window, now]. The key's row
-- stays locked until the calling transaction ends.
create function burst_take(p_key text, p_now_ms bigint, p_window_ms bigint, p_limit bigint)
returns table (ok boolean, hits bigint[])
language plpgsql as $$
begin
  return query
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
  returning w.accepted, w.hits_ms;
end $$;

-- Finishes a sync job still run by p_owner for its caller: completed, and its key answers with
-- a replay of status 200 (a code activated) or 422. Returns that status, or null when the job is
-- no longer ours (recovery took it over and released its key).
create function job_finish_sync(p_job text, p_now timestamptz, p_owner text, p_customer bigint, p_mode text,
                                p_request_id text) returns integer
language plpgsql as $$
declare
  v_key text;
  v_status integer;
begin
  update jobs set status = 'completed', finished_at = p_now, lease_owner = null
   where id = p_job and status = 'running' and lease_owner = p_owner and customer_id = p_customer and mode = p_mode
  returning idempotency_key into v_key;
  if not found then
    return null;
  end if;
  v_status := case when exists (select 1 from job_codes where job_id = p_job and state = 'done' and status = 'activated')
                   then 200 else 422 end;
  update idempotency_keys set state = 'done', response_status = v_status, response_request_id = p_request_id
   where customer_id = p_customer and mode = p_mode and key = v_key and job_id = p_job;
  return v_status;
end $$;

-- The webhook outbox (core/webhook-events.ts): an event row for a job, only when the customer
-- has a webhook registered for that mode. Returns whether one was written.
create function webhook_event_enqueue(p_id text, p_customer bigint, p_mode text, p_job text, p_event text,
                                      p_now timestamptz) returns boolean
language plpgsql as $$
begin
  insert into webhook_events (id, customer_id, mode, job_id, event, created_at, next_attempt_at)
  select p_id, p_customer, p_mode, p_job, p_event, p_now, p_now
    from webhooks where customer_id = p_customer and mode = p_mode;
  return found;
end $$;

-- Finishes an async job still run by p_owner: completed, and its redeem.completed event in the
-- outbox, in one commit. False when the job is no longer ours (recovery took it over and reports
-- it).
create function job_finish_async(p_job text, p_now timestamptz, p_owner text, p_event_id text) returns boolean
language plpgsql as $$
declare
  v_customer bigint;
  v_mode text;
begin
  update jobs set status = 'completed', finished_at = p_now, lease_owner = null
   where id = p_job and status = 'running' and lease_owner = p_owner
  returning customer_id, mode into v_customer, v_mode;
  if not found then
    return false;
  end if;
  perform webhook_event_enqueue(p_event_id, v_customer, v_mode, p_job, 'redeem.completed', p_now);
  return true;
end $$;

-- A job's codes as the camelCase fields core/jobs.ts builds results from, in position order.
create function job_codes_json(p_job text) returns jsonb
language plpgsql stable as $$
begin
  return (
    select coalesce(jsonb_agg(jsonb_build_object(
             'position', position, 'codeHash', code_hash, 'codeEncrypted', code_encrypted,
             'codeLength', code_length, 'last4', last4, 'stockId', stock_id, 'category', category, 'uc', uc,
             'state', state, 'status', status, 'errorCode', error_code, 'disposition', disposition,
             'billed', billed, 'reused', reused) order by position), '[]'::jsonb)
      from job_codes where job_id = p_job);
end $$;

-- Phase 1, first half (steps 10 of contract section 3, after authentication and the burst
-- limit): re-checks a cached key ({"kind": "recheck"} when it was revoked or its customer
-- disabled: the caller authenticates it again for the contract's answer), takes a burst slot
-- when asked, locks the account and reads the idempotency key. Returns the key's verdict:
-- conflict, in_progress, interrupted, replay, or new (with the released job to resume, if any).
-- p: key_id, check_key, burst, now_ms, window_ms, limit, customer_id, mode, now, idempotency_key,
--    fingerprint.
create function redeem_begin(p jsonb) returns jsonb
language plpgsql as $$
declare
  v_customer bigint := (p->>'customer_id')::bigint;
  v_mode text := p->>'mode';
  v_hits bigint[];
  v_ok boolean;
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
    select b.ok, b.hits into v_ok, v_hits
      from burst_take(p->>'key_id', (p->>'now_ms')::bigint, (p->>'window_ms')::bigint, (p->>'limit')::bigint) b;
    if not v_ok then
      return jsonb_build_object('kind', 'rate_limited', 'hits', v_hits);
    end if;
  end if;
  perform account_lock(v_customer, v_mode);
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

-- Phase 1, second half (steps 12 on, with the account locked by redeem_begin): holds billing for
-- the codes still to attempt, writes the job, copies the outcomes an earlier job of the same key
-- recorded, inserts the codes (the first p.sending of them already `sending`: marked out with
-- the upstream in this same commit, unless the same code is out for another request right now)
-- and takes the idempotency key (an async job's key replays its 202 from now on).
-- Returns {"kind": "started", "job_id", "todo": [positions to attempt], "sending": [those of them
-- marked]} or a billing refusal.
-- p: job_id, customer_id, mode, now, day, idempotency_key, fingerprint, request_id, is_async,
--    source, player_id, reference, previous, owner, lease_until, expires_at, sending,
--    codes: [{position, hash, encrypted, last4, stock_id, category, uc}].
create function redeem_create_job(p jsonb) returns jsonb
language plpgsql as $$
declare
  v_job text := p->>'job_id';
  v_customer bigint := (p->>'customer_id')::bigint;
  v_mode text := p->>'mode';
  v_now timestamptz := (p->>'now')::timestamptz;
  v_async boolean := (p->>'is_async')::boolean;
  v_previous text := p->>'previous';
  v_todo integer;
  v_todo_codes jsonb[];
  v_reused integer := 0;
  v_hold jsonb;
  v_sending integer[] := '{}';
  v_todo_positions integer[] := '{}';
  v_sending_max integer := coalesce((p->>'sending')::integer, 0);
  c jsonb;
begin
  -- The codes still to attempt, in position order: those whose outcome an earlier job of the
  -- same key has not recorded.
  select coalesce(array_agg(e order by (e->>'position')::integer), '{}') into v_todo_codes
    from jsonb_array_elements(p->'codes') e
   where v_previous is null or not exists (
     select 1 from job_codes d where d.job_id = v_previous and d.position = (e->>'position')::integer and d.state = 'done');
  v_todo := cardinality(v_todo_codes);
  if v_todo > 0 then
    v_hold := billing_hold(v_customer, v_mode, v_now, (p->>'day')::date, v_todo);
    if v_hold ? 'refusal' then
      return v_hold;
    end if;
  else
    v_hold := jsonb_build_object('day', p->>'day', 'rate', 0, 'included', 0, 'wallet', 0);
  end if;
  if v_previous is not null then
    select count(*) into v_reused from job_codes where job_id = v_previous and state = 'done';
  end if;
  insert into jobs (id, customer_id, mode, idempotency_key, is_async, status, source, player_id, reference, total,
                    hold_day, rate_micros, hold_included, hold_wallet, lease_owner, lease_expires_at, created_at,
                    started_at, request_id)
  values (v_job, v_customer, v_mode, p->>'idempotency_key', v_async, case when v_async then 'queued' else 'running' end,
          p->>'source', p->>'player_id', p->>'reference', v_reused + v_todo,
          (v_hold->>'day')::date, (v_hold->>'rate')::bigint, (v_hold->>'included')::integer, (v_hold->>'wallet')::integer,
          case when v_async then null else p->>'owner' end,
          case when v_async then null else (p->>'lease_until')::timestamptz end,
          v_now, case when v_async then null else v_now end, p->>'request_id');
  if v_previous is not null then
    insert into job_codes (job_id, position, code_hash, code_encrypted, code_length, last4, stock_id, category, uc,
                           state, status, error_code, disposition, billed, reused, finished_at)
    select v_job, position, code_hash, code_encrypted, code_length, last4, stock_id, category, uc,
           'done', status, error_code, disposition, billed, true, v_now
      from job_codes where job_id = v_previous and state = 'done';
  end if;
  foreach c in array v_todo_codes
  loop
    v_todo_positions := v_todo_positions || (c->>'position')::integer;
    if coalesce(array_length(v_sending, 1), 0) < v_sending_max then
      -- Out with the upstream from this commit on; the same code out for another request at
      -- this moment (job_codes_in_flight) stays pending, and its attempt reports it failed.
      insert into job_codes (job_id, position, code_hash, code_encrypted, last4, stock_id, category, uc, state, started_at)
      values (v_job, (c->>'position')::integer, c->>'hash', c->>'encrypted', c->>'last4', (c->>'stock_id')::bigint,
              c->>'category', (c->>'uc')::integer, 'sending', v_now)
      on conflict do nothing;
      if found then
        v_sending := v_sending || (c->>'position')::integer;
        continue;
      end if;
    end if;
    insert into job_codes (job_id, position, code_hash, code_encrypted, last4, stock_id, category, uc, state)
    values (v_job, (c->>'position')::integer, c->>'hash', c->>'encrypted', c->>'last4', (c->>'stock_id')::bigint,
            c->>'category', (c->>'uc')::integer, 'pending');
  end loop;
  -- An expired key (older than 24 hours) is replaced as if it were absent.
  insert into idempotency_keys (customer_id, mode, key, fingerprint, state, job_id, created_at, expires_at,
                                response_status, response_request_id)
  values (v_customer, v_mode, p->>'idempotency_key', p->>'fingerprint', case when v_async then 'done' else 'in_progress' end,
          v_job, v_now, (p->>'expires_at')::timestamptz,
          case when v_async then 202 end, case when v_async then p->>'request_id' end)
  on conflict (customer_id, mode, key) do update
    set fingerprint = excluded.fingerprint, state = excluded.state, job_id = excluded.job_id,
        response_status = excluded.response_status, response_request_id = excluded.response_request_id,
        created_at = case when idempotency_keys.expires_at <= excluded.created_at then excluded.created_at else idempotency_keys.created_at end,
        expires_at = case when idempotency_keys.expires_at <= excluded.created_at then excluded.expires_at else idempotency_keys.expires_at end;
  return jsonb_build_object('kind', 'started', 'job_id', v_job, 'todo', to_jsonb(v_todo_positions),
                            'sending', to_jsonb(v_sending), 'account', v_hold->'account');
end $$;

-- Phase 1 of a redeem of the caller's own codes, in one round trip: redeem_begin, then
-- redeem_create_job. Every answer carries the burst window (hits) and the account state after
-- it (for the quota headers); a refusal commits only the burst slot it took.
create function redeem_start(p jsonb) returns jsonb
language plpgsql as $$
declare
  v_begin jsonb := redeem_begin(p);
  v_result jsonb;
begin
  if v_begin->>'kind' = 'recheck' or v_begin->>'kind' = 'rate_limited' then
    return v_begin;
  end if;
  if v_begin->>'kind' = 'new' then
    v_result := redeem_create_job(p || jsonb_build_object('previous', v_begin->'previous'));
  else
    v_result := v_begin;
  end if;
  -- The account for the quota headers: as the hold left it, else read now.
  return v_result || jsonb_build_object(
    'hits', v_begin->'hits',
    'account', coalesce(v_result->'account',
                        account_state((p->>'customer_id')::bigint, p->>'mode', (p->>'day')::date)));
end $$;

-- Records one code's outcome with its capture or release and its stock state, and keeps the
-- job's lease; with p.finish, the code that completes a sync job also finishes it and its key
-- (job_finish_sync) and returns what the answer needs: the status, the codes and the account.
-- {"recorded": false} when the outcome was recorded already (by recovery racing a slow
-- process): never billed twice.
-- p: job_id, position, from_state, status, error_code, disposition, billed, category, uc, now,
--    lease_until, stock_state, finish, owner, customer_id, mode, day, request_id.
create function redeem_record_outcome(p jsonb) returns jsonb
language plpgsql as $$
declare
  v_job text := p->>'job_id';
  v_now timestamptz := (p->>'now')::timestamptz;
  v_stock bigint;
  v_wallet bigint := 0;
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
    perform stock_set_state(array[v_stock], p->>'stock_state', v_now);
  end if;
  v_result := jsonb_build_object('recorded', true, 'wallet_micros', v_wallet);
  if coalesce((p->>'finish')::boolean, false)
     and not exists (select 1 from job_codes where job_id = v_job and state <> 'done') then
    v_status := job_finish_sync(v_job, v_now, p->>'owner', (p->>'customer_id')::bigint, p->>'mode', p->>'request_id');
    if v_status is not null then
      return v_result || jsonb_build_object(
        'finished', v_status,
        'codes', job_codes_json(v_job),
        'account', account_state((p->>'customer_id')::bigint, p->>'mode', (p->>'day')::date));
    end if;
  end if;
  -- Codes still to record: the job stays ours a while longer (a finished job needs no lease).
  update jobs set lease_expires_at = greatest(lease_expires_at, (p->>'lease_until')::timestamptz) where id = v_job;
  return v_result;
end $$;
