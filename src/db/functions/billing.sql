-- The billing wing: every money write of the service, once (README "Each money rule exists
-- once"). Three functions write money and nothing else does:
--   ledger_append  the wallet ledger and the cached balance, together;
--   usage_record   a customer's daily usage (requests held or billed, and of those the overage);
--   quarantine_settle  a quarantined code found used or unused.
-- Hold, capture and release (and through them the redeem, recovery and async paths) call them; so
-- do the wallet's top-ups (the admin API and the demo seed) and the quarantine settler. A test
-- (no direct money writes) fails when TypeScript writes these tables itself.
-- Lock order everywhere: the account row, then the job row (or daily_usage, stock rows).
-- Business time comes from the caller (the service's clock), never from now(): tests move it.
-- Every statement names the customer, so on Citus it runs on that customer's worker.

-- Earlier arities, without the customer (create or replace cannot change a signature).
drop function if exists billing_capture_one(text, timestamptz);
drop function if exists billing_release_one(text);

-- Appends one ledger entry and moves the cached balance with it (the account row is made when
-- missing); returns the new entry's id (an operator's answer names it: docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments). `p_actor`:
-- the operator's name, or 'system' for the service's own entries (charges, settlements); `p_request_id`: the request that caused it, if
-- known. A capture's entry may take the balance below zero only through a settlement (an outcome
-- that happened is billed): the caller decides, this function only records.
create or replace function ledger_append(p_customer bigint, p_mode text, p_amount bigint, p_kind text,
                                         p_note text, p_reference text, p_at timestamptz,
                                         p_actor text, p_request_id text) returns bigint
language plpgsql as $$
declare
  v_balance bigint;
  v_entry bigint;
begin
  update accounts set balance_micros = balance_micros + p_amount
   where customer_id = p_customer and mode = p_mode
  returning balance_micros into v_balance;
  if not found then
    insert into accounts (customer_id, mode) values (p_customer, p_mode) on conflict do nothing;
    update accounts set balance_micros = balance_micros + p_amount
     where customer_id = p_customer and mode = p_mode
    returning balance_micros into v_balance;
  end if;
  insert into wallet_ledger (customer_id, mode, amount_micros, balance_after_micros, kind, note, reference,
                             created_at, actor, request_id)
  values (p_customer, p_mode, p_amount, v_balance, p_kind, coalesce(p_note, ''), p_reference, p_at,
          coalesce(p_actor, 'system'), p_request_id)
  returning id into v_entry;
  return v_entry;
end $$;

-- Adds to a customer's usage of one UTC day: p_used requests held or billed, p_overage of them on
-- the wallet. Negative for a release, whose hold made the row (a check constraint refuses an
-- insert of a negative count even where it would conflict, so a release only updates).
-- The day's row exists for every hold but the day's first: update it first (a plain update,
-- HOT), and insert only when it is missing. An insert ... on conflict do update on an existing
-- row writes a lock record before its update (one log record less per hold).
create or replace function usage_record(p_customer bigint, p_mode text, p_day date, p_used integer,
                                        p_overage integer) returns boolean
language plpgsql as $$
begin
  update daily_usage set used = used + p_used, overage = overage + p_overage
   where customer_id = p_customer and mode = p_mode and day = p_day;
  if not found and p_used >= 0 and p_overage >= 0 then
    -- Two first holds of a day at once: the second waits on the first's insert, then adds.
    insert into daily_usage (customer_id, mode, day, used, overage) values (p_customer, p_mode, p_day, p_used, p_overage)
    on conflict (customer_id, mode, day) do update
      set used = daily_usage.used + excluded.used, overage = daily_usage.overage + excluded.overage;
  end if;
  return true;
end $$;

-- Step 12 of docs/reference/redeem.md#validation-order (billing, docs/reference/billing-and-quota.md#billing-a-redeem), under the account lock: decides how
-- p_requests are held (the daily include first, then the wallet) and records the hold, returning
-- it with the account after it, or returns the refusal ({"refusal": error_code, ...}, with the
-- account as read) having written nothing.
create or replace function billing_hold(p_customer bigint, p_mode text, p_now timestamptz, p_day date,
                                        p_requests integer) returns jsonb
language plpgsql as $$
declare
  s jsonb := account_state(p_customer, p_mode, p_day);
  v_limit integer;
  v_rate bigint;
  v_remaining integer;
  v_included integer;
  v_wallet integer;
  v_done boolean;
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
    v_done := usage_record(p_customer, p_mode, p_day, p_requests, v_wallet);
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
-- (the hold let go and the charge appended in the same step). Returns the micro-dollars taken
-- from the wallet (0 for an included or a $0 request). The ledger entry names the job and the
-- request that created it.
-- Each step is one conditional update, no `select ... for update` first: an update's condition
-- is checked again on the newest version of the row after any concurrent capture or release of
-- the same job commits, so two outcomes never take the same open request, and the row is
-- written once, not locked and then written (one heap write and one log record less).
create or replace function billing_capture_one(p_customer bigint, p_job text, p_now timestamptz) returns bigint
language plpgsql as $$
declare
  j record;
  v_entry bigint;
begin
  update jobs set captured_included = captured_included + 1
   where customer_id = p_customer and id = p_job and hold_included - captured_included - released_included > 0;
  if found then
    return 0;
  end if;
  update jobs set captured_wallet = captured_wallet + 1
   where customer_id = p_customer and id = p_job and hold_wallet - captured_wallet - released_wallet > 0
  returning customer_id, mode, rate_micros, request_id into j;
  if not found then
    if not exists (select 1 from jobs where customer_id = p_customer and id = p_job) then
      raise exception 'job % not found', p_job;
    end if;
    -- A bot redeem holds and bills nothing (docs/reference/bot.md#commands): its outcomes are recorded unbilled,
    -- and this guard keeps it so should one ever be recorded as billed.
    if exists (select 1 from jobs where customer_id = p_customer and id = p_job and channel = 'bot') then
      return 0;
    end if;
    raise exception 'job % has no open hold to capture', p_job;
  end if;
  -- A $0 request moves no money: no balance update, no ledger row of 0.
  if j.rate_micros = 0 then
    return 0;
  end if;
  update accounts set held_micros = held_micros - j.rate_micros
   where customer_id = j.customer_id and mode = j.mode;
  v_entry := ledger_append(j.customer_id, j.mode, -j.rate_micros, 'charge', 'redeem request', p_job, p_now,
                             'system', j.request_id);
  return j.rate_micros;
end $$;

-- Refunds one held request of a job: a wallet one while any is open, else an included one.
create or replace function billing_release_one(p_customer bigint, p_job text) returns void
language plpgsql as $$
declare
  j record;
  v_from_wallet boolean;
  v_done boolean;
begin
  select customer_id, mode, hold_day, rate_micros, channel,
         hold_included - captured_included - released_included as open_included,
         hold_wallet - captured_wallet - released_wallet as open_wallet
    into j from jobs where customer_id = p_customer and id = p_job for update;
  if not found then
    raise exception 'job % not found', p_job;
  end if;
  -- A bot redeem held nothing (docs/reference/bot.md#commands): nothing to give back.
  if j.channel = 'bot' then
    return;
  end if;
  v_from_wallet := j.open_wallet > 0;
  if not v_from_wallet and j.open_included <= 0 then
    raise exception 'job % has no open hold to release', p_job;
  end if;
  -- The account row before daily_usage, as every billing path takes them (phase 1 holds the
  -- account while it adds to daily_usage): the other order deadlocks.
  v_done := account_lock(j.customer_id, j.mode);
  if v_from_wallet then
    update jobs set released_wallet = released_wallet + 1 where customer_id = p_customer and id = p_job;
  else
    update jobs set released_included = released_included + 1 where customer_id = p_customer and id = p_job;
  end if;
  v_done := usage_record(j.customer_id, j.mode, j.hold_day, -1, case when v_from_wallet then -1 else 0 end);
  if v_from_wallet and j.rate_micros > 0 then
    update accounts set held_micros = held_micros - j.rate_micros
     where customer_id = j.customer_id and mode = j.mode;
  end if;
end $$;

-- Settles one quarantined code (docs/reference/redeem.md#dispositions: `quarantined` is held until checked):
--   used   → the code is gone: a stock code is deleted, and one request is billed, as code_used,
--            on the day its job was held: from that day's include while any is left under the
--            current plan, else from the wallet at the job's rate. The outcome happened, so it is
--            billed even when the wallet cannot pay (the balance may go below zero; the ledger
--            still sums to it);
--   unused → a stock code goes back to stock; a caller code stays kept; nothing is billed.
-- The charge names the job and the redeem request that sent the code.
-- Returns {"customer_id", "mode", "wallet_micros"}, or null when the code is not (or no longer) quarantined and
-- unsettled: settling twice never bills twice.
-- `p_actor`: the operator who settled it or ran the check (null for the automatic check), kept
-- beside the settlement for the quarantine list.
drop function if exists quarantine_settle(text, integer, text, text, timestamptz);
drop function if exists quarantine_settle(text, integer, text, text, timestamptz, text);
create or replace function quarantine_settle(p_customer bigint, p_job text, p_position integer, p_settlement text,
                                             p_by text, p_now timestamptz, p_actor text) returns jsonb
language plpgsql as $$
declare
  j record;
  v_stock bigint;
  v_included boolean;
  v_wallet bigint := 0;
  v_done boolean;
  v_entry bigint;
  v_moved integer;
begin
  select customer_id, mode, hold_day, rate_micros, request_id, channel into j
    from jobs where customer_id = p_customer and id = p_job;
  if not found then
    return null;
  end if;
  -- The account row first, as every billing path does, then the code's row.
  v_done := account_lock(j.customer_id, j.mode);
  select stock_id into v_stock from job_codes
   where customer_id = p_customer and job_id = p_job and position = p_position and disposition = 'quarantined' and settled_at is null
     and not reused
  for update;
  if not found then
    return null;
  end if;
  if v_stock is not null then
    v_moved := stock_set_state(p_customer, array[v_stock], case when p_settlement = 'used' then 'deleted' else 'available' end,
                               p_now);
  end if;
  -- A bot redeem's code is settled in stock like any other, and billed never (docs/reference/bot.md#commands).
  if p_settlement = 'used' and j.channel = 'api' then
    select coalesce(p.daily_limit is not null and coalesce(u.used, 0) - coalesce(u.overage, 0) < p.daily_limit, false)
      into v_included
      from (select 1) one
      left join plans p on p.customer_id = j.customer_id
      left join daily_usage u on u.customer_id = j.customer_id and u.mode = j.mode and u.day = j.hold_day;
    v_done := usage_record(j.customer_id, j.mode, j.hold_day, 1, case when v_included then 0 else 1 end);
    if not v_included and j.rate_micros > 0 then
      v_entry := ledger_append(j.customer_id, j.mode, -j.rate_micros, 'charge',
                                 'quarantined code settled as used (code_used)', p_job, p_now, 'system',
                                 j.request_id);
      v_wallet := j.rate_micros;
    end if;
  end if;
  update job_codes set settlement = p_settlement, settled_at = p_now, settled_by = p_by, settled_actor = p_actor
   where customer_id = p_customer and job_id = p_job and position = p_position;
  return jsonb_build_object('customer_id', j.customer_id, 'mode', j.mode, 'wallet_micros', v_wallet);
end $$;
