-- Payments that credit nothing, and top-up requests that belong to the person who asked.

-- The binding (bot_users row) a live request was made under: the request is the person's and the
-- customer's, so unbinding the person, binding them elsewhere or disabling the customer voids it.
-- Null for requests made before this column existed (they are matched by telegram_user_id).
alter table topup_requests add column bot_user_id text references bot_users (id);
create index topup_requests_pending_by_person on topup_requests (telegram_user_id, customer_id)
  where state = 'pending';

-- topup_payments now records every Telegram payment the bot received, credited or not, still one
-- row per telegram_payment_charge_id: a redelivered payment finds its row whichever way it went.
-- A payment that does not match a pending request of a customer the payer owns (wrong amount or
-- currency, unknown or voided request, someone else's invoice) is `unmatched`: no ledger entry,
-- kept with what Telegram said so an operator can refund it by its charge id.
alter table topup_payments alter column request_id drop not null;
alter table topup_payments alter column ledger_entry drop not null;
alter table topup_payments add column outcome text not null default 'credited'
  check (outcome in ('credited', 'unmatched'));
-- The id an unmatched payment is listed under (`tpu_…`); null for a credited one, which is listed
-- as its request.
alter table topup_payments add column id text unique;
alter table topup_payments add column customer_id bigint references customers (id);
alter table topup_payments add column payer_customer_id bigint references customers (id);
alter table topup_payments add column telegram_user_id bigint;
alter table topup_payments add column chat_id bigint;
alter table topup_payments add column total_amount bigint;
alter table topup_payments add column currency text;
alter table topup_payments add column invoice_payload text;
alter table topup_payments add column reason text;
create index topup_payments_unmatched on topup_payments (created_at desc, id desc) where outcome = 'unmatched';
