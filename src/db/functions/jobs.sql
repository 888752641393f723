-- The jobs wing: finishing a job and reading its codes (finishAsyncJob, finishSyncJob, loadJobWithCodes).
-- Business time comes from the caller (the service's clock), never from now().
-- Every statement names the job's customer, so on Citus it runs on that customer's worker
-- (docs/running/citus.md).

-- Earlier arities, without the customer (create or replace cannot change a signature).
drop function if exists job_finish_async(text, timestamptz, text, text);
drop function if exists job_codes_json(text);
drop function if exists job_codes_scan(text);

-- Finishes a sync job still run by p_owner, its key answering p_status (200 when a code was
-- activated, else 422; the caller knows from its scan of the codes): the job and its key in one
-- statement. Returns p_status, or null when the job is no longer ours (recovery took it over and
-- released its key).
create or replace function job_finish_sync_as(p_job text, p_now timestamptz, p_owner text, p_customer bigint, p_mode text,
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

-- Finishes a sync job still run by p_owner for its caller: completed, and its key answers with
-- a replay of status 200 (a code activated) or 422. Returns that status, or null when the job is
-- no longer ours (recovery took it over and released its key).
create or replace function job_finish_sync(p_job text, p_now timestamptz, p_owner text, p_customer bigint, p_mode text,
                                           p_request_id text) returns integer
language plpgsql as $$
begin
  -- A statement of its own, not a subquery in the call's arguments: on Citus this call may run
  -- whole on the customer's worker, which runs a plain query of the customer's shard there, and
  -- refuses one it would plan as a distributed query ("cannot execute a distributed query from a
  -- query on a shard").
  perform 1 from job_codes where customer_id = p_customer and job_id = p_job
                              and state = 'done' and status = 'activated' limit 1;
  return job_finish_sync_as(p_job, p_now, p_owner, p_customer, p_mode, p_request_id,
    case when found then 200 else 422 end);
end $$;

-- Finishes an async job still run by p_owner: completed, and its redeem.completed event in the
-- outbox, in one commit. False when the job is no longer ours (recovery took it over and reports
-- it).
create or replace function job_finish_async(p_customer bigint, p_job text, p_now timestamptz, p_owner text,
                                            p_event_id text) returns boolean
language plpgsql as $$
declare
  v_customer bigint;
  v_mode text;
  v_enqueued boolean;
begin
  update jobs set status = 'completed', finished_at = p_now, lease_owner = null
   where customer_id = p_customer and id = p_job and status = 'running' and lease_owner = p_owner
  returning customer_id, mode into v_customer, v_mode;
  if not found then
    return false;
  end if;
  v_enqueued := webhook_event_enqueue(p_event_id, v_customer, v_mode, p_job, 'redeem.completed', p_now);
  return true;
end $$;

-- A job's codes in one scan: whether all are done, whether one was activated, and the codes as
-- the camelCase fields of JobCodeRow that results are built from, in position order. The outcome
-- that finishes a sync job needs all three (redeem_record_outcome: one statement, not two).
create or replace function job_codes_scan(p_customer bigint, p_job text, out all_done boolean, out activated boolean,
                                          out codes jsonb)
language plpgsql stable as $$
begin
  select bool_and(state = 'done'), coalesce(bool_or(state = 'done' and status = 'activated'), false),
         coalesce(jsonb_agg(jsonb_build_object(
           'position', position, 'codeHash', code_hash, 'codeEncrypted', code_encrypted,
           'codeLength', code_length, 'last4', last4, 'stockId', stock_id, 'category', category, 'uc', uc,
           'state', state, 'status', status, 'errorCode', error_code, 'disposition', disposition,
           'billed', billed, 'reused', reused) order by position), '[]'::jsonb)
    into all_done, activated, codes
    from job_codes where customer_id = p_customer and job_id = p_job;
end $$;

-- A job's codes alone, as job_codes_scan gives them.
create or replace function job_codes_json(p_customer bigint, p_job text) returns jsonb
language plpgsql stable as $$
begin
  return (job_codes_scan(p_customer, p_job)).codes;
end $$;
