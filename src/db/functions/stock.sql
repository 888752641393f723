-- Moves a customer's stock codes to a state; back to `available` they are no longer anyone's
-- reservation.
drop function if exists stock_set_state(bigint[], text, timestamptz);
create or replace function stock_set_state(p_customer bigint, p_ids bigint[], p_state text, p_now timestamptz)
returns integer
language plpgsql as $$
declare
  v_moved integer;
begin
  update stock_codes
     set state = p_state, updated_at = p_now,
         reserved_by = case when p_state = 'available' then null else reserved_by end
   where customer_id = p_customer and id = any(p_ids);
  get diagnostics v_moved = row_count;
  return v_moved;
end $$;
