// The checker's daily cap (docs/reference/bot.md#commands): at most BOT_CHECKS_PER_DAY codes per customer and UTC
// day, counted in the database so every process shares it.
import type { Queryable } from '../../db/database.ts';

/**
 * Counts `n` checks for the customer's day when they fit under `cap`; otherwise counts nothing.
 * Returns whether they were counted and how many were counted that day before.
 */
export async function takeChecks(
  q: Queryable,
  input: { customerId: number; day: string; n: number; cap: number },
): Promise<{ ok: boolean; used: number }> {
  if (input.n > input.cap) return { ok: false, used: 0 };
  const r = await q.query<{ checked: number }>(
    `insert into bot_check_usage (customer_id, day, checked) values ($1, $2::date, $3)
     on conflict (customer_id, day) do update set checked = bot_check_usage.checked + excluded.checked
      where bot_check_usage.checked + excluded.checked <= $4
     returning checked`,
    [input.customerId, input.day, input.n, input.cap],
  );
  if (r.rows[0]) return { ok: true, used: r.rows[0].checked - input.n };
  const used = await q.query<{ checked: number }>(
    'select checked from bot_check_usage where customer_id = $1 and day = $2::date',
    [input.customerId, input.day],
  );
  return { ok: false, used: used.rows[0]?.checked ?? 0 };
}
