// Long polling has one owner at a time across processes (docs/reference/bot.md#running-the-bot): a lease row in the
// database, taken when free or run out, renewed by its holder, given up at a graceful stop. A
// process that dies stops renewing; another takes over once the lease runs out.
import type { Queryable } from '../../db/database.ts';

/**
 * Takes or renews the lease for `owner` until now + ttlMs. True when `owner` holds it now. With
 * `force` (the embedded database, where no other process can be running) any holder is replaced.
 */
export async function takePollLease(
  q: Queryable,
  botId: number,
  owner: string,
  now: Date,
  ttlMs: number,
  force = false,
): Promise<boolean> {
  const r = await q.query(
    `insert into bot_poll_lease (bot_id, owner, expires_at) values ($5, $1, $2)
     on conflict (bot_id) do update set owner = excluded.owner, expires_at = excluded.expires_at
      where bot_poll_lease.owner = excluded.owner or bot_poll_lease.expires_at < $3 or $4`,
    [owner, new Date(now.getTime() + ttlMs), now, force, botId],
  );
  return r.rowCount > 0;
}

/** Gives the lease up (a graceful stop), so another process takes over at once. */
export async function releasePollLease(q: Queryable, botId: number, owner: string): Promise<void> {
  await q.query('delete from bot_poll_lease where bot_id = $1 and owner = $2', [botId, owner]);
}

/** The process that polls now (the lease's holder while it runs), or null. */
export async function pollingInstance(q: Queryable, now: Date): Promise<string | null> {
  const r = await q.query<{ owner: string }>(
    'select owner from bot_poll_lease where expires_at > $1 order by expires_at desc limit 1',
    [now],
  );
  return r.rows[0]?.owner ?? null;
}
