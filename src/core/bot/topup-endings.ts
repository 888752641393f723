// How a pending top-up request ends without money (docs/reference/bot.md#top-ups): expired after
// its 7 days, voided by a change that takes it from its person (unbound, bound elsewhere or again
// as staff, the customer disabled) or cancelled by the person's /cancel. Each in the transaction
// of that change; on Citus each update names its customer, so it runs on that customer's worker
// alone (docs/running/citus.md#the-bot). Asking and paying are topups.ts and topup-payments.ts.
import type { Queryable } from '../../db/database.ts';
import { COLUMNS, rowFrom, type TopupRow } from './topups.ts';

/**
 * Pending requests past their 7 days: expired; returned so the person can be told. Found with one
 * read, then expired one customer at a time (on Citus on that customer's worker alone).
 */
export async function expireTopups(q: Queryable, now: Date): Promise<TopupRow[]> {
  const due = await q.query<{ customerId: string; ids: string[] }>(
    `select customer_id as "customerId", array_agg(id) as ids from topup_requests
      where state = 'pending' and expires_at <= $1 group by customer_id`,
    [now],
  );
  const expired: TopupRow[] = [];
  for (const { customerId, ids } of due.rows) {
    const r = await q.query<TopupRow>(
      `update topup_requests set state = 'expired', decided_at = $1
        where customer_id = $2 and id = any($3::text[]) and state = 'pending' and expires_at <= $1
       returning ${COLUMNS}`,
      [now, customerId, ids],
    );
    expired.push(...r.rows.map(rowFrom));
  }
  return expired;
}

/**
 * Voids pending requests, in the caller's transaction (the one of the change that voids them):
 * state `rejected`, decided now by `decidedBy`, reason `voided: <why>`. Which requests: the
 * customer's (`customerId` alone: the customer was disabled), the person's for that customer
 * (`customerId` with `telegramUserId`), or the person's for any customer but `exceptCustomerId`
 * (they were bound elsewhere). Returns the ids voided.
 */
export async function voidPendingTopups(
  tx: Queryable,
  now: Date,
  x: {
    customerId?: number;
    telegramUserId?: number;
    exceptCustomerId?: number;
    decidedBy: string;
    why: string;
  },
): Promise<string[]> {
  if (x.customerId === undefined && x.telegramUserId === undefined)
    throw new Error('voidPendingTopups: name the customer, the person or both');
  const which = `state = 'pending' and ($1::bigint is null or telegram_user_id = $1) and ($2::bigint is null or customer_id <> $2)`;
  const params = [x.telegramUserId ?? null, x.exceptCustomerId ?? null];
  // The customers first (a read, on Citus of every worker when the customer is not named), then
  // each customer's requests voided on that customer's worker alone.
  const customers =
    x.customerId !== undefined
      ? [x.customerId]
      : (
          await tx.query<{ customerId: string }>(
            `select distinct customer_id as "customerId" from topup_requests where ${which}`,
            params,
          )
        ).rows.map((row) => Number(row.customerId));
  const voided: string[] = [];
  for (const customerId of customers) {
    const r = await tx.query<{ id: string }>(
      `update topup_requests set state = 'rejected', decided_at = $4, decided_by = $5, reason = $6
        where customer_id = $3 and ${which}
       returning id`,
      [...params, customerId, now, x.decidedBy, `voided: ${x.why}`],
    );
    voided.push(...r.rows.map((row) => row.id));
  }
  return voided.sort();
}

/** A disabled customer's pending requests, voided in the disable's transaction (its audit details). */
export async function voidCustomerTopups(tx: Queryable, now: Date, customerId: number, decidedBy: string) {
  const voided = await voidPendingTopups(tx, now, {
    customerId,
    decidedBy,
    why: 'the customer was disabled',
  });
  return voided.length ? { voided_topups: voided } : {};
}

/**
 * The person's pending top-up confirmations for the customer, voided (the chat's /cancel): their
 * requests and invoices can no longer be paid or approved. Name the person by their binding
 * (`botUserId`) or their Telegram id; `decidedBy` defaults to `telegram:<id>`. Run it in the
 * transaction of the update that asked. Returns the ids voided (none: nothing was pending).
 */
export async function cancelPendingTopups(
  q: Queryable,
  who: { botUserId?: string; telegramUserId?: number; customerId: number; now: Date; decidedBy?: string },
): Promise<string[]> {
  let telegramUserId = who.telegramUserId;
  if (telegramUserId === undefined) {
    if (who.botUserId === undefined) throw new Error('cancelPendingTopups: name the person');
    const r = await q.query<{ telegramUserId: string }>(
      'select telegram_user_id as "telegramUserId" from bot_users where customer_id = $2 and id = $1',
      [who.botUserId, who.customerId],
    );
    if (!r.rows[0]) return [];
    telegramUserId = Number(r.rows[0].telegramUserId);
  }
  return voidPendingTopups(q, who.now, {
    customerId: who.customerId,
    telegramUserId,
    decidedBy: who.decidedBy ?? `telegram:${telegramUserId}`,
    why: 'cancelled in the chat',
  });
}
