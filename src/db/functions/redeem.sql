-- The redeem hot path as SQL functions (docs/architecture.md#house-rules). A crash-safe sync redeem
-- needs two durable commits: one that marks its codes `sending` before the activator is called,
-- one that records the outcome with its capture or release and finishes the job and its key.
-- Each is one statement calling one function below, so one round trip. The money they move goes
-- through the billing wing (billing.sql); the stock, burst and job wings do the rest.
--
-- Business time comes from the caller (the service's clock), never from now(): tests move it.
-- Every function is PL/pgSQL, also the one-query ones: PostgreSQL plans a SQL-language function's
-- query again on every call it does not inline, while PL/pgSQL keeps its plans per connection.
-- Helpers are called as expressions (`v := f(...)`), which PL/pgSQL runs without a whole query.
-- Lock order: the account row, then the job row (or daily_usage, stock rows).

-- Earlier arities of two functions below, dropped so that a database made by an earlier version
-- keeps one function of each name (create or replace cannot change a signature).
drop function if exists redeem_record_outcome(text, integer, text, text, text, text, boolean, text, integer,
  timestamptz, timestamptz, text, boolean, text, text, bigint, text, date, text);
drop function if exists redeem_record_outcome(text, integer, text, text, text, text, boolean, text, integer,
  timestamptz, timestamptz, text, boolean, text, text, bigint, text, date, text, text, text, text, text, text,
  text, boolean, text);
drop function if exists redeem_create_job(text, bigint, text, timestamptz, date, text, text, text, boolean, text, text,
  text, text, text, timestamptz, timestamptz, integer, jsonb);

-- Phase 1, first half (steps 10 of docs/reference/redeem.md#validation-order, after authentication and the burst
-- limit): re-checks a cached key ({"kind": "recheck"} when it was revoked, expired or its customer
-- disabled: the caller authenticates it again for the answer in its documented order), takes a burst slot
-- when asked, locks the account and reads the idempotency key. Returns the key's verdict:
-- conflict, in_progress, interrupted, replay, or new (with the released job to resume, if any).
-- Typed arguments, here and below, not a jsonb bag: PostgreSQL checks each value's type at the
-- call (one round trip either way); startRedeem passes them in this order.
create or replace function redeem_begin(
  p_key_id text, p_check_key boolean, p_burst boolean, p_now_ms bigint, p_window_ms bigint, p_limit bigint,
  p_customer bigint, p_mode text, p_now timestamptz, p_idempotency_key text, p_fingerprint text) returns jsonb
language plpgsql as $$
declare
  v_hits bigint[];
  v_burst record;
  v_locked boolean;
  k record;
  v_job record;
begin
  if coalesce(p_check_key, false) then
    perform 1 from api_keys ak join customers c on c.id = ak.customer_id
     where ak.customer_id = p_customer and ak.id = p_key_id and ak.revoked_at is null and c.disabled_at is null
       -- A reroll (docs/reference/operators-and-audit.md#key-reroll) moves a cached key's expiry: read it again too.
       and (ak.expires_at is null or ak.expires_at > p_now);
    if not found then
      return jsonb_build_object('kind', 'recheck');
    end if;
  end if;
  if coalesce(p_burst, false) then
    v_burst := key_burst_take(p_customer, p_key_id, p_now_ms, p_window_ms, p_limit);
    v_hits := v_burst.hits;
    if not v_burst.ok then
      return jsonb_build_object('kind', 'rate_limited', 'hits', v_hits);
    end if;
  end if;
  v_locked := account_lock(p_customer, p_mode);
  select fingerprint, state, job_id, response_status, response_request_id into k
    from idempotency_keys
   where customer_id = p_customer and mode = p_mode and key = p_idempotency_key
     and expires_at > p_now;
  if not found then
    return jsonb_build_object('kind', 'new', 'previous', null, 'hits', v_hits);
  end if;
  if k.fingerprint <> p_fingerprint then
    return jsonb_build_object('kind', 'conflict', 'hits', v_hits);
  end if;
  if k.state = 'in_progress' then
    return jsonb_build_object('kind', 'in_progress', 'hits', v_hits);
  end if;
  if k.state = 'done' then
    select is_async, status into v_job from jobs where customer_id = p_customer and id = k.job_id;
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
-- recorded, inserts the codes (the first p_sending of them already `sending`: marked out with
-- the upstream in this same commit, unless the same code is out for another request right now)
-- and takes the idempotency key (an async job's key replays its 202 from now on).
-- Returns {"kind": "started", "job_id", "todo": [positions to attempt], "sending": [those of them
-- marked]} or a billing refusal.
-- p_codes: [{position, hash, encrypted, last4, stock_id, category, uc}] (a list of records; jsonb
-- keeps it one argument).
create or replace function redeem_create_job(
  p_job text, p_customer bigint, p_mode text, p_now timestamptz, p_day date, p_idempotency_key text,
  p_fingerprint text, p_request_id text, p_is_async boolean, p_source text, p_player_id text, p_reference text,
  p_previous text, p_owner text, p_lease_until timestamptz, p_expires_at timestamptz, p_sending integer,
  p_codes jsonb, p_channel text default 'api') returns jsonb
language plpgsql as $$
declare
  v_job text := p_job;
  v_customer bigint := p_customer;
  v_mode text := p_mode;
  v_now timestamptz := p_now;
  v_async boolean := p_is_async;
  v_previous text := p_previous;
  v_todo integer;
  v_todo_codes jsonb;
  v_reused integer := 0;
  v_hold jsonb;
  v_sending integer[] := '{}';
  v_todo_positions integer[] := '{}';
  v_sending_max integer := coalesce(p_sending, 0);
  v_done boolean;
  c jsonb;
begin
  -- The codes still to attempt, in position order: those whose outcome an earlier job of the
  -- same key has not recorded. p_codes comes in position order (startRedeem): a new
  -- key's codes are all of them, with no query (one statement less per redeem).
  if v_previous is null then
    v_todo_codes := p_codes;
  else
    select coalesce(jsonb_agg(e order by (e->>'position')::integer), '[]') into v_todo_codes
      from jsonb_array_elements(p_codes) e
     where not exists (
       select 1 from job_codes d where d.customer_id = v_customer and d.job_id = v_previous and d.position = (e->>'position')::integer and d.state = 'done');
  end if;
  v_todo := jsonb_array_length(v_todo_codes);
  -- A bot redeem (docs/reference/bot.md#commands) is outside the API quota: no plan needed, nothing held.
  if v_todo > 0 and p_channel = 'api' then
    v_hold := billing_hold(v_customer, v_mode, v_now, p_day, v_todo);
    if v_hold ? 'refusal' then
      return v_hold;
    end if;
  else
    v_hold := jsonb_build_object('day', p_day, 'rate', 0, 'included', 0, 'wallet', 0);
  end if;
  if v_previous is not null then
    select count(*) into v_reused from job_codes
     where customer_id = v_customer and job_id = v_previous and state = 'done';
  end if;
  insert into jobs (id, customer_id, mode, idempotency_key, is_async, status, source, player_id, reference, total,
                    hold_day, rate_micros, hold_included, hold_wallet, lease_owner, lease_expires_at, created_at,
                    started_at, request_id, channel)
  values (v_job, v_customer, v_mode, p_idempotency_key, v_async, case when v_async then 'queued' else 'running' end,
          p_source, p_player_id, p_reference, v_reused + v_todo,
          (v_hold->>'day')::date, (v_hold->>'rate')::bigint, (v_hold->>'included')::integer, (v_hold->>'wallet')::integer,
          case when v_async then null else p_owner end,
          case when v_async then null else p_lease_until end,
          v_now, case when v_async then null else v_now end, p_request_id, p_channel);
  if v_previous is not null then
    insert into job_codes (customer_id, job_id, position, code_hash, code_encrypted, code_length, last4, stock_id, category, uc,
                           state, status, error_code, disposition, billed, reused, finished_at)
    -- customer_id from the rows copied (not v_customer), so Citus runs the copy on the customer's
    -- worker instead of through the coordinator in a two-phase commit (docs/running/citus.md#two-phase-commits).
    select customer_id, v_job, position, code_hash, code_encrypted, code_length, last4, stock_id, category, uc,
           'done', status, error_code, disposition, billed, true, v_now
      from job_codes where customer_id = v_customer and job_id = v_previous and state = 'done';
  end if;
  -- Element by element, each a simple expression (a `for ... in select` loop would be a query).
  for i in 0 .. v_todo - 1
  loop
    c := v_todo_codes -> i;
    v_todo_positions := v_todo_positions || (c->>'position')::integer;
    if coalesce(array_length(v_sending, 1), 0) < v_sending_max then
      -- Out with the upstream from this commit on; the same code out for another request at
      -- this moment (job_codes_in_flight) stays pending, and its attempt reports it failed.
      insert into job_codes (customer_id, job_id, position, code_hash, code_encrypted, last4, stock_id, category, uc, state, started_at)
      values (v_customer, v_job, (c->>'position')::integer, c->>'hash', c->>'encrypted', c->>'last4', (c->>'stock_id')::bigint,
              c->>'category', (c->>'uc')::integer, 'sending', v_now)
      on conflict do nothing;
      if found then
        v_sending := v_sending || (c->>'position')::integer;
        continue;
      end if;
    end if;
    insert into job_codes (customer_id, job_id, position, code_hash, code_encrypted, last4, stock_id, category, uc, state)
    values (v_customer, v_job, (c->>'position')::integer, c->>'hash', c->>'encrypted', c->>'last4', (c->>'stock_id')::bigint,
            c->>'category', (c->>'uc')::integer, 'pending');
  end loop;
  if v_async then
    v_done := work_queue_add('job', v_customer, v_mode);
  end if;
  -- A bot redeem has no Idempotency-Key: its confirmation (bot_redeems) runs it once.
  if p_channel = 'bot' then
    return jsonb_build_object('kind', 'started', 'job_id', v_job, 'todo', to_jsonb(v_todo_positions),
                              'sending', to_jsonb(v_sending));
  end if;
  -- An expired key (older than 24 hours) is replaced as if it were absent.
  insert into idempotency_keys (customer_id, mode, key, fingerprint, state, job_id, created_at, expires_at,
                                response_status, response_request_id)
  values (v_customer, v_mode, p_idempotency_key, p_fingerprint, case when v_async then 'done' else 'in_progress' end,
          v_job, v_now, p_expires_at,
          case when v_async then 202 end, case when v_async then p_request_id end)
  on conflict (customer_id, mode, key) do update
    set fingerprint = excluded.fingerprint, state = excluded.state, job_id = excluded.job_id,
        response_status = excluded.response_status, response_request_id = excluded.response_request_id,
        created_at = case when idempotency_keys.expires_at <= excluded.created_at then excluded.created_at else idempotency_keys.created_at end,
        expires_at = case when idempotency_keys.expires_at <= excluded.created_at then excluded.expires_at else idempotency_keys.expires_at end;
  -- wallet_charges: how many of its outcomes may charge the wallet (a ledger row each). On Citus
  -- such an outcome is recorded on the coordinator, so the ledger's ids stay in commit order
  -- (docs/running/citus.md#distributed-functions).
  return jsonb_build_object('kind', 'started', 'job_id', v_job, 'todo', to_jsonb(v_todo_positions),
                            'sending', to_jsonb(v_sending), 'account', v_hold->'account',
                            'wallet_charges', case when (v_hold->>'rate')::bigint > 0
                                                   then (v_hold->>'wallet')::integer else 0 end);
end $$;

-- Phase 1 of a redeem of the caller's own codes, in one round trip: redeem_begin, then
-- redeem_create_job. Every answer carries the burst window (hits) and the account state after
-- it (for the quota headers); a refusal commits only the burst slot it took.
create or replace function redeem_start(
  p_key_id text, p_check_key boolean, p_burst boolean, p_now_ms bigint, p_window_ms bigint, p_limit bigint,
  p_customer bigint, p_mode text, p_now timestamptz, p_idempotency_key text, p_fingerprint text,
  p_job text, p_day date, p_request_id text, p_is_async boolean, p_source text, p_player_id text,
  p_reference text, p_owner text, p_lease_until timestamptz, p_expires_at timestamptz, p_sending integer,
  p_codes jsonb) returns jsonb
language plpgsql as $$
declare
  v_begin jsonb := redeem_begin(p_key_id, p_check_key, p_burst, p_now_ms, p_window_ms, p_limit, p_customer, p_mode,
                                p_now, p_idempotency_key, p_fingerprint);
  v_result jsonb;
begin
  if v_begin->>'kind' = 'recheck' or v_begin->>'kind' = 'rate_limited' then
    return v_begin;
  end if;
  if v_begin->>'kind' = 'new' then
    v_result := redeem_create_job(p_job, p_customer, p_mode, p_now, p_day, p_idempotency_key, p_fingerprint,
                                  p_request_id, p_is_async, p_source, p_player_id, p_reference,
                                  v_begin->>'previous', p_owner, p_lease_until, p_expires_at, p_sending, p_codes);
  else
    v_result := v_begin;
  end if;
  -- The account for the quota headers: as the hold left it, else read now.
  return v_result || jsonb_build_object(
    'hits', v_begin->'hits',
    'account', coalesce(v_result->'account',
                        account_state(p_customer, p_mode, p_day)));
end $$;

-- Records one code's outcome with its capture or release and its stock state, and keeps the
-- job's lease; with p_finish, the code that completes a sync job also finishes it and its key
-- (job_finish_sync_as) and returns what the answer needs: the status, the codes and the account;
-- with p_finish_event_id, the code that completes an async job completes it and puts its
-- redeem.completed event in the outbox (job_finish_async), one commit less per async job.
-- {"recorded": false} when the outcome was recorded already (by recovery racing a slow
-- process): never billed twice.
-- p_memory_*: the activator's memory an activated answer rests on (the sandbox's,
-- docs/reference/redeem.md#activators; the activator's ActivationOutcome.memory), written here, in the
-- outcome's commit. When it is there already (the code was activated before, or by a request
-- that committed first), the answer was wrong: the outcome recorded, billed and set in stock is
-- p_used_* (code_used, as dispositionOf maps it), and the answer says {"remembered": true}.
-- A row is written under p_memory_code_hash (the keyring's first key) and found under
-- p_memory_older_hashes too (the ring's other keys: a row written before a key rotation).
-- Typed arguments, not a jsonb bag: PostgreSQL checks each value's type at the call (one round
-- trip either way), and recordOutcome passes them in this order.
create or replace function redeem_record_outcome(
  p_job text, p_position integer, p_from_state text, p_status text, p_error_code text, p_disposition text,
  p_billed boolean, p_category text, p_uc integer, p_now timestamptz, p_lease_until timestamptz,
  p_stock_state text, p_finish boolean, p_finish_event_id text, p_owner text, p_customer bigint, p_mode text,
  p_day date, p_request_id text, p_memory_mode text, p_memory_code_hash text, p_memory_player_id text,
  p_used_status text, p_used_error_code text, p_used_disposition text, p_used_billed boolean,
  p_used_stock_state text, p_memory_older_hashes text[]) returns jsonb
language plpgsql as $$
declare
  v_stock bigint;
  v_wallet bigint := 0;
  v_moved integer;
  v_all_done boolean;
  v_scan record;
  v_status integer;
  v_billed boolean := p_billed;
  v_stock_state text := p_stock_state;
  v_remembered boolean := false;
  v_result jsonb;
begin
  update job_codes
     set state = 'done', status = p_status, error_code = p_error_code, disposition = p_disposition,
         billed = p_billed, category = coalesce(category, p_category),
         uc = coalesce(uc, p_uc), finished_at = p_now
   where customer_id = p_customer and job_id = p_job and position = p_position and state = p_from_state
  returning stock_id into v_stock;
  if not found then
    return jsonb_build_object('recorded', false);
  end if;
  if p_memory_code_hash is not null then
    -- Two outcomes of the same code at once: the second waits for the first one's commit here,
    -- then finds its row.
    if p_memory_older_hashes is not null and exists (
         select 1 from sandbox_redemptions
          where mode = p_memory_mode and code_hash = any(p_memory_older_hashes)) then
      v_remembered := true;
    else
      insert into sandbox_redemptions (mode, code_hash, player_id, created_at)
      values (p_memory_mode, p_memory_code_hash, p_memory_player_id, p_now)
      on conflict do nothing;
      v_remembered := not found;
    end if;
    if v_remembered then
      v_billed := p_used_billed;
      v_stock_state := p_used_stock_state;
      update job_codes
         set status = p_used_status, error_code = p_used_error_code, disposition = p_used_disposition,
             billed = p_used_billed
       where customer_id = p_customer and job_id = p_job and position = p_position;
    end if;
  end if;
  if v_billed then
    v_wallet := billing_capture_one(p_customer, p_job, p_now);
  else
    perform billing_release_one(p_customer, p_job);
  end if;
  if v_stock is not null then
    v_moved := stock_set_state(p_customer, array[v_stock], v_stock_state, p_now);
  end if;
  v_result := jsonb_build_object('recorded', true, 'wallet_micros', v_wallet, 'remembered', v_remembered);
  if p_finish_event_id is not null then
    -- An async job: completed when this was its last code, with its redeem.completed event in
    -- the outbox.
    select bool_and(state = 'done') into v_all_done from job_codes
     where customer_id = p_customer and job_id = p_job;
    if v_all_done and job_finish_async(p_customer, p_job, p_now, p_owner, p_finish_event_id) then
      return v_result || jsonb_build_object('finished_async', true);
    end if;
  elsif p_finish then
    -- A sync job: one scan of its codes says whether this was the last and whether one was
    -- activated, and gives the codes its answer shows.
    v_scan := job_codes_scan(p_customer, p_job);
    if v_scan.all_done then
      v_status := job_finish_sync_as(p_job, p_now, p_owner, p_customer, p_mode, p_request_id,
                                     case when v_scan.activated then 200 else 422 end);
      if v_status is not null then
        return v_result || jsonb_build_object(
          'finished', v_status,
          'codes', v_scan.codes,
          'account', account_state(p_customer, p_mode, p_day));
      end if;
    end if;
  end if;
  -- Codes still to record: the job stays ours a while longer (a finished job needs no lease).
  update jobs set lease_expires_at = greatest(lease_expires_at, p_lease_until)
   where customer_id = p_customer and id = p_job;
  return v_result;
end $$;
