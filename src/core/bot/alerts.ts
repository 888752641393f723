// Alerts to a customer's owners in the chat (docs/reference/bot.md#alerts): the live wallet under an owner's
// threshold, a required subscription expiring within 3 days or expired, a live stock category
// at 0 available, webhook events that ended failed. Each condition's state is a row of
// bot_alert_states; an alert is sent when a conditional update flips it on (or moves its mark to
// a new occurrence), which exactly one process wins, so no occurrence is told twice across
// restarts and processes. It is told again only after it cleared.
import type { Queryable } from '../../db/database.ts';
import { loadAccountState, spendableMicros } from '../accounts/accounts.ts';
import { utcDay } from '../clock.ts';
import { usdText } from '../money.ts';
import { BOT_USER_COLUMNS, type BotUser, botUserFrom } from './links.ts';

export const EXPIRING_WITHIN_MS = 3 * 24 * 3600 * 1000;

/** A line to send to one chat. */
export interface Alert {
  chatId: number;
  text: string;
}

/** An owner with their settings. */
type Owner = BotUser & { alertBalanceMicros: number | null };

/**
 * Flips a condition's state. Returns true when this call started an occurrence (it was off, or
 * on for another mark), false otherwise; a condition no longer true is cleared.
 */
export async function flipCondition(
  q: Queryable,
  input: { customerId: number; condition: string; active: boolean; mark: Date | null; now: Date },
): Promise<boolean> {
  const { customerId, condition, active, mark, now } = input;
  await q.query(
    `insert into bot_alert_states (customer_id, condition, active, mark, changed_at) values ($1, $2, false, null, $3)
     on conflict do nothing`,
    [customerId, condition, now],
  );
  if (!active) {
    await q.query(
      `update bot_alert_states set active = false, changed_at = $3 where customer_id = $1 and condition = $2 and active`,
      [customerId, condition, now],
    );
    return false;
  }
  const r = await q.query(
    `update bot_alert_states set active = true, mark = $3, changed_at = $4
      where customer_id = $1 and condition = $2 and (not active or mark is distinct from $3)`,
    [customerId, condition, mark, now],
  );
  return r.rowCount > 0;
}

async function owners(q: Queryable, customerId: number): Promise<Owner[]> {
  const r = await q.query<BotUser & { threshold: string | null }>(
    `select ${BOT_USER_COLUMNS}, u.alert_balance_micros as threshold
       from bot_users u join customers c on c.id = u.customer_id
      where u.customer_id = $1 and u.unbound_at is null and u.role = 'owner' and not u.alerts_off
      order by u.bound_at`,
    [customerId],
  );
  return r.rows.map(({ threshold, ...row }) => ({
    ...botUserFrom(row),
    alertBalanceMicros: threshold === null ? null : Number(threshold),
  }));
}

/** Customers with an owner who takes alerts. */
async function alertedCustomers(q: Queryable): Promise<number[]> {
  const r = await q.query<{ id: string }>(
    `select distinct customer_id as id from bot_users u join customers c on c.id = u.customer_id
      where u.unbound_at is null and u.role = 'owner' and not u.alerts_off and c.disabled_at is null`,
  );
  return r.rows.map((x) => Number(x.id));
}

/** One pass over every alerted customer: the alerts that started now, to send. */
export async function alertPass(q: Queryable, now: Date): Promise<Alert[]> {
  const out: Alert[] = [];
  for (const customerId of await alertedCustomers(q)) out.push(...(await customerAlerts(q, customerId, now)));
  return out;
}

async function customerAlerts(q: Queryable, customerId: number, now: Date): Promise<Alert[]> {
  const to = await owners(q, customerId);
  if (to.length === 0) return [];
  const out: Alert[] = [];
  const all = (text: string) => out.push(...to.map((o) => ({ chatId: o.chatId, text })));
  const flip = (condition: string, active: boolean, mark: Date | null = null) =>
    flipCondition(q, { customerId, condition, active, mark, now });
  const state = await loadAccountState(q, customerId, 'live', utcDay(now));
  if (!state) return [];

  const spendable = spendableMicros(state);
  for (const o of to) {
    const below = o.alertBalanceMicros !== null && spendable < o.alertBalanceMicros;
    if (await flip(`balance:${o.id}`, below))
      out.push({
        chatId: o.chatId,
        text: `[live]\nAlert: the wallet balance is below your threshold.\nbalance_usd: ${usdText(spendable)}\nthreshold_usd: ${usdText(o.alertBalanceMicros!)}\nTop up with /topup <usd>.`,
      });
  }

  const sub = state.subscription;
  const expiresAt = sub.required ? sub.expiresAt : null;
  const left = expiresAt ? expiresAt.getTime() - now.getTime() : null;
  const day = expiresAt ? expiresAt.toISOString().slice(0, 10) : '';
  if (await flip('subscription_expiring', left !== null && left > 0 && left <= EXPIRING_WITHIN_MS, expiresAt))
    all(
      `[live]\nAlert: the bot subscription expires on ${day} (${Math.ceil(left! / 86_400_000)} days).\nRenew it with your operator; after it, API redeems answer 402 subscription_expired.`,
    );
  if (await flip('subscription_expired', left !== null && left <= 0, expiresAt))
    all(
      `[live]\nAlert: the bot subscription expired on ${day}.\nAPI redeems answer 402 subscription_expired until it is renewed; ask your operator.`,
    );

  const stock = await q.query<{ category: string; available: number }>(
    `select category, (count(*) filter (where state = 'available'))::int as available from stock_codes
      where customer_id = $1 and mode = 'live' group by category order by category`,
    [customerId],
  );
  for (const row of stock.rows)
    if (await flip(`stock:${row.category}`, row.available === 0))
      all(
        `[live]\nAlert: the stock of ${row.category} is empty.\n${row.category}: 0\nAdd codes with /addstock ${row.category}.`,
      );

  const failed = await webhookFailures(q, customerId, now);
  if (failed)
    all(
      `[live]\nAlert: webhook events failed (their deliveries were dropped after every retry).\nfailed_events: ${failed.count}\nlast_event: ${failed.last}\nRedeliver them from the event log (POST /v1/events/{id}/redeliver).`,
    );
  return out;
}

/**
 * Live webhook events that ended failed since the mark (the newest one told); the first pass only
 * sets the mark, so history is not told. Moves the mark with a conditional update (one process).
 */
async function webhookFailures(
  q: Queryable,
  customerId: number,
  now: Date,
): Promise<{ count: number; last: string } | null> {
  const mark = await q.query<{ mark: Date | null }>(
    `select mark from bot_alert_states where customer_id = $1 and condition = 'webhooks'`,
    [customerId],
  );
  if (!mark.rows[0]) {
    await q.query(
      `insert into bot_alert_states (customer_id, condition, active, mark, changed_at) values ($1, 'webhooks', false, $2, $2)
       on conflict do nothing`,
      [customerId, now],
    );
    return null;
  }
  const since = mark.rows[0].mark ?? now;
  const r = await q.query<{ count: number; newest: Date | null; last: string | null }>(
    `select count(*)::int as count, max(finished_at) as newest,
            (array_agg(id order by finished_at desc))[1] as last
       from webhook_events
      where customer_id = $1 and mode = 'live' and state = 'dropped' and finished_at > $2`,
    [customerId, since],
  );
  const row = r.rows[0]!;
  if (row.count === 0 || !row.newest) return null;
  const moved = await q.query(
    `update bot_alert_states set mark = $3, changed_at = $4 where customer_id = $1 and condition = 'webhooks' and mark = $2`,
    [customerId, since, row.newest, now],
  );
  return moved.rowCount > 0 ? { count: row.count, last: row.last! } : null;
}

/** An owner's settings for /alerts. */
async function alertSettings(q: Queryable, owner: { id: string; customerId: number }) {
  const r = await q.query<{ threshold: string | null; off: boolean }>(
    'select alert_balance_micros as threshold, alerts_off as off from bot_users where customer_id = $1 and id = $2',
    [owner.customerId, owner.id],
  );
  const row = r.rows[0];
  return { thresholdMicros: row?.threshold == null ? null : Number(row.threshold), off: row?.off ?? false };
}

/** /alerts: makes the change asked for (none: only shows them), then the owner's settings as they stand. */
export async function setAlertSettings(
  q: Queryable,
  owner: { id: string; customerId: number },
  change: { thresholdMicros?: number | null; off?: boolean },
): Promise<{ thresholdMicros: number | null; off: boolean }> {
  if (change.thresholdMicros !== undefined)
    await q.query('update bot_users set alert_balance_micros = $3 where customer_id = $1 and id = $2', [
      owner.customerId,
      owner.id,
      change.thresholdMicros,
    ]);
  if (change.off !== undefined)
    await q.query('update bot_users set alerts_off = $3 where customer_id = $1 and id = $2', [
      owner.customerId,
      owner.id,
      change.off,
    ]);
  return alertSettings(q, owner);
}
