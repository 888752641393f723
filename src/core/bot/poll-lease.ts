// Long polling has one owner at a time across processes (contract 14.1): a lease row in the
// database, taken when free or run out, renewed by its holder, given up at a graceful stop. A
// process that dies stops renewing; another takes over once the lease runs out.
import type { Queryable } from '../../db/database.ts';

/** Takes or renews the lease for `owner` until now + ttlMs. True when `owner` holds it now. */
export async function takePollLease(q: Queryable, owner: string, now: Date, ttlMs: number): Promise<boolean> {
  const r = await q.query(
    `insert into bot_poll_lease (id, owner, expires_at) values (1, $1, $2)
     on conflict (id) do update set owner = excluded.owner, expires_at = excluded.expires_at
      where bot_poll_lease.owner = excluded.owner or bot_poll_lease.expires_at < $3`,
    [owner, new Date(now.getTime() + ttlMs), now],
  );
  return r.rowCount > 0;
}

/** Gives the lease up (a graceful stop), so another process takes over at once. */
export async function releasePollLease(q: Queryable, owner: string): Promise<void> {
  await q.query('delete from bot_poll_lease where id = 1 and owner = $1', [owner]);
}
