-- An async job is finished by the commit of its last outcome, as a sync job is (issue 10): given
-- `finish_event_id`, redeem_record_outcome completes the job and puts its redeem.completed event
-- in the outbox (job_finish_async) when this outcome was the job's last. One commit less per async
-- job; the worker still finishes a job no outcome finished (finishAsyncJob), as before.
-- The function is 0013's with that branch added (a migration redefines the whole function).

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
  if coalesce((p->>'finish')::boolean, false) or p->>'finish_event_id' is not null then
    -- One scan of the job's codes: all done (this was the last), and whether one was activated.
    select bool_and(state = 'done'), coalesce(bool_or(state = 'done' and status = 'activated'), false)
      into v_all_done, v_activated
      from job_codes where job_id = v_job;
    if v_all_done and p->>'finish_event_id' is not null then
      -- An async job: completed, with its redeem.completed event in the outbox.
      if job_finish_async(v_job, v_now, p->>'owner', p->>'finish_event_id') then
        return v_result || jsonb_build_object('finished_async', true);
      end if;
    elsif v_all_done then
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
