// Telegram redelivers updates (a poll whose offset was not confirmed, a webhook retried): each is
// acted on at most once, across restarts and processes, by recording its update_id in the
// transaction of its effect (docs/reference/bot.md#running-the-bot). A redelivered update finds the row and does nothing.
import type { Database, Queryable } from '../../db/database.ts';
import type { Clock } from '../clock.ts';

const SKIP = Symbol('already acted on');

/**
 * Runs `effect` in one transaction, opened here, with the update recorded as acted on
 * (docs/reference/bot.md#running-the-bot), so a redelivered update does nothing. Returns null when the update was acted on before
 * (then `effect` does not run). `effect` makes its calls into core with the handle it is given.
 */
export async function actOnUpdateOnce<T>(
  db: Pick<Database, 'transaction'>,
  clock: Clock,
  update: { id: number; kind: string },
  effect: (tx: Queryable) => Promise<T>,
): Promise<T | null> {
  const result = await db.transaction(async (tx) => {
    if (!(await claimUpdate(tx, update.id, update.kind, clock.now()))) return SKIP;
    return effect(tx);
  });
  return result === SKIP ? null : (result as T);
}

/**
 * Records the update as acted on, in `tx` (the transaction of its effect). False when it was
 * recorded before: the caller then does nothing (its transaction changes nothing either).
 */
export async function claimUpdate(
  tx: Queryable,
  updateId: number,
  kind: string,
  now: Date,
): Promise<boolean> {
  const r = await tx.query(
    'insert into bot_updates (update_id, kind, acted_at) values ($1, $2, $3) on conflict do nothing',
    [updateId, kind, now],
  );
  return r.rowCount > 0;
}

/** Whether the update was acted on already (a cheap look before any work). */
export async function updateSeen(q: Queryable, updateId: number): Promise<boolean> {
  const r = await q.query('select 1 from bot_updates where update_id = $1', [updateId]);
  return r.rows.length > 0;
}

/** When the newest update was acted on (GET /admin/v1/bot). */
export async function lastUpdateAt(q: Queryable): Promise<Date | null> {
  const r = await q.query<{ at: Date }>('select max(acted_at) as at from bot_updates');
  return r.rows[0]?.at ?? null;
}

/** Forgets updates older than `before` (Telegram keeps an update 24 hours at most). */
export async function pruneUpdates(q: Queryable, before: Date): Promise<number> {
  const r = await q.query('delete from bot_updates where acted_at < $1', [before]);
  return r.rowCount;
}
