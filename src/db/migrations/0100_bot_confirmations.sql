-- A manual redeem's confirmation belongs to the person's binding it was made under, not only to
-- their Telegram user: unbinding, or binding the person to another customer, voids it (a press
-- afterwards runs nothing). Null for confirmations made before this column: those are judged by
-- their customer alone.
alter table bot_redeems add column bot_user_id text references bot_users (id);
