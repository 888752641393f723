-- The account wing: the billing lock and the one account view. Applied after the migrations at
-- every start when this file's text changed (applyFunctions); `create or replace` only.
-- Business time comes from the caller (the service's clock), never from now(): tests move it.
-- PL/pgSQL throughout: it keeps its plans per connection, and Citus plans a PL/pgSQL body's
-- statements one by one (a language sql function that reads customer tables cannot be called with
-- parameters on a Citus coordinator).

-- The billing lock of a customer and mode: the account row, made when missing. Returns true, so
-- callers take the lock as an expression (`v := account_lock(...)`), the cheapest PL/pgSQL call.
create or replace function account_lock(p_customer bigint, p_mode text) returns boolean
language plpgsql as $$
begin
  perform 1 from accounts where customer_id = p_customer and mode = p_mode for update;
  if not found then
    insert into accounts (customer_id, mode) values (p_customer, p_mode) on conflict do nothing;
    perform 1 from accounts where customer_id = p_customer and mode = p_mode for update;
  end if;
  return true;
end $$;

-- The one account view: what billing, the quota headers and GET /v1/me need about one customer
-- in one mode on one day, as the camelCase fields of the AccountRow type. No row for no such
-- customer. Every join is on the customer, so on Citus it is one shard group's query.
create or replace function account_row(p_customer bigint, p_mode text, p_day date)
returns table ("disabled" boolean, "subRequired" boolean, "subExpiresAt" timestamptz, "label" text,
               "dailyLimit" integer, "perRequestMicros" bigint, "overage" boolean, "active" boolean,
               "balanceMicros" bigint, "heldMicros" bigint, "usedToday" integer, "overageToday" integer)
language plpgsql stable as $$
begin
  return query
  select c.disabled_at is not null, c.subscription_required, c.subscription_expires_at,
         p.label, p.daily_limit, p.per_request_micros, p.overage, p.active,
         coalesce(a.balance_micros, 0)::int8, coalesce(a.held_micros, 0)::int8,
         coalesce(u.used, 0), coalesce(u.overage, 0)
    from customers c
    left join plans p on p.customer_id = c.id
    left join accounts a on a.customer_id = c.id and a.mode = p_mode
    left join daily_usage u on u.customer_id = c.id and u.mode = p_mode and u.day = p_day
   where c.id = p_customer;
end $$;

-- account_row as one jsonb value (null for no such customer), for PL/pgSQL callers and answers
-- that carry the account inside a larger jsonb.
create or replace function account_state(p_customer bigint, p_mode text, p_day date) returns jsonb
language plpgsql stable as $$
begin
  return (select to_jsonb(a) from account_row(p_customer, p_mode, p_day) a);
end $$;
