-- Which customer holds each API key, found by the key's digest (docs/running/citus.md#keys-to-customers).
-- A request arrives with a key, not a customer: on Citus, where api_keys is spread over the
-- workers by customer, a lookup by digest alone would ask every worker. This table is small
-- (a row per key, written when an operator or the demo makes one) and is a Citus reference
-- table (a copy on every node), so the lookup is local and the key's row is then read on its
-- customer's worker. It also keeps the one rule on keys that spans customers: a digest is
-- unique (api_keys' own unique index names the customer first). `seq` is the key's api_keys.seq:
-- what the unknown-key limit's known digests read (core/keys/known-key-digests.ts).
create table key_directory (
  key_sha256 text primary key,
  customer_id bigint not null,
  seq bigint not null
);
create index key_directory_seq on key_directory (seq);

insert into key_directory (key_sha256, customer_id, seq)
select key_sha256, customer_id, seq from api_keys;
