-- The request log says why a request failed, not only what failed: the key that sent it (its label
-- is read from the key), for a redeem the player, the job and its codes' outcomes by status
-- (`{"bad_player": 1}`), and the error body's message. All may be null: most refusals have none.
alter table request_log
  add column key_id text,
  add column player_id text,
  add column job_id text,
  add column outcomes jsonb,
  add column message text;

-- The operator's filters: a player's refusals, and the rows of one error code (whose counts the
-- list shows above itself).
create index request_log_by_player on request_log (player_id, at desc, id desc) where player_id is not null;
create index request_log_by_error_code on request_log (error_code, at desc, id desc);
