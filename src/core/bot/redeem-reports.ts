// What the progress loop (bot/progress.ts) reads and marks of the bot's manual redeems
// (docs/reference/bot.md#commands): the started ones with news to report, each report claimed
// once across processes (markReported, markFinished), and the confirmations nobody pressed in
// time. The confirmation and its press are core/bot/redeems.ts.
import type { Queryable } from '../../db/database.ts';
import { readAcrossCustomers } from '../../db/reachable-shards.ts';
import type { Mode } from '../vocabulary.ts';
import { CONFIRM_TTL_MS, type RedeemSummary } from './redeems.ts';

/** A started bot redeem as the progress loop reports it. */
export interface StartedRedeem {
  id: string;
  customerId: number;
  chatId: number;
  messageId: number | null;
  mode: Mode;
  jobId: string;
  reportedDone: number;
  summary: RedeemSummary;
  jobStatus: string;
  total: number;
  done: number;
}

/**
 * Started bot redeems whose progress or end is not reported yet (oldest first). Read on every
 * worker; while one does not answer, the others' (readAcrossCustomers), oldest first per shard.
 */
export async function startedRedeems(q: Queryable, limit = 50): Promise<StartedRedeem[]> {
  const r = await readAcrossCustomers<StartedRedeem>(q, {
    tables: ['bot_redeems', 'jobs', 'job_codes'],
    sql: `select b.id, b.customer_id as "customerId", b.chat_id as "chatId", b.message_id as "messageId", b.mode, b.job_id as "jobId",
            b.reported_done as "reportedDone", b.summary, j.status as "jobStatus", j.total,
            (select count(*)::int from job_codes c where c.customer_id = j.customer_id and c.job_id = j.id and c.state = 'done') as done
       from bot_redeems b join jobs j on j.customer_id = b.customer_id and j.id = b.job_id
      where b.state = 'started'
      order by b.created_at limit $1`,
    params: [limit],
  });
  return r.rows.map((row) => ({
    ...row,
    chatId: Number(row.chatId),
    messageId: row.messageId === null ? null : Number(row.messageId),
  }));
}

/** Moves the reported count forward; false when another process reported it first. */
export async function markReported(
  q: Queryable,
  redeem: { id: string; customerId: number },
  from: number,
  to: number,
): Promise<boolean> {
  const r = await q.query(
    `update bot_redeems set reported_done = $3
      where customer_id = $4 and id = $1 and state = 'started' and reported_done = $2`,
    [redeem.id, from, to, redeem.customerId],
  );
  return r.rowCount > 0;
}

/** Marks the end reported; false when another process did (so the final message is sent once). */
export async function markFinished(
  q: Queryable,
  redeem: { id: string; customerId: number },
  now: Date,
): Promise<boolean> {
  const r = await q.query(
    `update bot_redeems set state = 'finished', finished_at = $2 where customer_id = $3 and id = $1 and state = 'started'`,
    [redeem.id, now, redeem.customerId],
  );
  return r.rowCount > 0;
}

/**
 * Confirmations nobody pressed within 10 minutes: ended, their codes dropped. Returns them. Found
 * with one read (while a Citus worker does not answer, on the others: readAcrossCustomers), then
 * ended one customer at a time (on Citus each update on that customer's
 * worker alone, docs/running/citus.md#the-bot); a confirmation pressed in between stays pressed.
 */
export async function expireConfirmations(
  q: Queryable,
  now: Date,
): Promise<{ id: string; chatId: number; messageId: number | null }[]> {
  const cutoff = new Date(now.getTime() - CONFIRM_TTL_MS);
  const due = await readAcrossCustomers<{ customerId: number; ids: string[] }>(q, {
    tables: ['bot_redeems'],
    sql: `select customer_id as "customerId", array_agg(id) as ids from bot_redeems
           where state = 'confirming' and created_at < $1 group by customer_id`,
    params: [cutoff],
  });
  const ended: { id: string; chatId: number; messageId: number | null }[] = [];
  for (const { customerId, ids } of due.rows) {
    const r = await q.query<{ id: string; chatId: number; messageId: number | null }>(
      `update bot_redeems set state = 'expired', decided_at = $1, request = null
        where customer_id = $3 and id = any($4::text[]) and state = 'confirming' and created_at < $2
       returning id, chat_id as "chatId", message_id as "messageId"`,
      [now, cutoff, customerId, ids],
    );
    for (const x of r.rows)
      ended.push({
        id: x.id,
        chatId: Number(x.chatId),
        messageId: x.messageId === null ? null : Number(x.messageId),
      });
  }
  return ended;
}
