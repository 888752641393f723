-- The order keys were made in, for the known-key digests (createKnownKeyDigests): a
-- process keeps the digests of every key in memory so the unknown-key limit (docs/reference/limits.md#unknown-key-floods) never
-- refuses a valid key, and reads only the keys made since its last read. `created_at` cannot
-- order them (it comes from the service's clock); a sequence can.
alter table api_keys add column seq bigserial;
create index api_keys_seq on api_keys (seq);
