// What an id names (GET /admin/v1/lookup, the console's search box): recognised by its
// shape (core/ids.ts prefixes; a player id is 5 to 20 digits, docs/reference/redeem.md#the-request), then looked up.
import type { Queryable } from '../../db/database.ts';
import { requestLogRowsOf } from './request-log.ts';

export type LookupKind = 'request' | 'job' | 'event' | 'player';

export type Lookup =
  | { kind: 'request'; found: boolean; job_id: string | null; customer_id: number | null; logged: number }
  | { kind: 'job'; found: boolean; job_id: string; customer_id: number | null }
  | {
      kind: 'event';
      found: boolean;
      event_id: string;
      customer_id: number | null;
      mode: string | null;
      job_id: string | null;
    }
  | { kind: 'player'; found: boolean; player_id: string; jobs: number }
  | { kind: null; found: false };

const ID = /^(req|job|evt)_[0-9A-Za-z]{1,64}$/;
const PLAYER = /^\d{5,20}$/;

/** The kind of id `q` is by its shape, or null. */
export function kindOf(q: string): LookupKind | null {
  const m = ID.exec(q);
  if (m) return ({ req: 'request', job: 'job', evt: 'event' } as const)[m[1] as 'req' | 'job' | 'evt'];
  return PLAYER.test(q) ? 'player' : null;
}

export async function lookupId(q: Queryable, raw: string): Promise<Lookup> {
  const id = raw.trim();
  const kind = kindOf(id);
  if (kind === 'request') {
    // A request that created a job answered 2xx and is not in the log: the job keeps its id.
    // (jobs.request_id has no index: an operator's lookup scans the jobs, by design rare.)
    const job = await q.query<{ id: string; customerId: number }>(
      'select id, customer_id as "customerId" from jobs where request_id = $1 limit 1',
      [id],
    );
    const logged = await requestLogRowsOf(q, id);
    const j = job.rows[0];
    return {
      kind,
      found: j !== undefined || logged.length > 0,
      job_id: j?.id ?? null,
      customer_id: j ? Number(j.customerId) : (logged[0]?.customer_id ?? null),
      logged: logged.length,
    };
  }
  if (kind === 'job') {
    const r = await q.query<{ customerId: number }>(
      'select customer_id as "customerId" from jobs where id = $1',
      [id],
    );
    const row = r.rows[0];
    return { kind, found: row !== undefined, job_id: id, customer_id: row ? Number(row.customerId) : null };
  }
  if (kind === 'event') {
    const r = await q.query<{ customerId: number; mode: string; jobId: string }>(
      'select customer_id as "customerId", mode, job_id as "jobId" from webhook_events where id = $1',
      [id],
    );
    const row = r.rows[0];
    return {
      kind,
      found: row !== undefined,
      event_id: id,
      customer_id: row ? Number(row.customerId) : null,
      mode: row?.mode ?? null,
      job_id: row?.jobId ?? null,
    };
  }
  if (kind === 'player') {
    const r = await q.query<{ n: number }>(
      'select count(*)::int as n from (select 1 from jobs where player_id = $1 limit 1000) j',
      [id],
    );
    const n = Number(r.rows[0]?.n ?? 0);
    return { kind, found: n > 0, player_id: id, jobs: n };
  }
  return { kind: null, found: false };
}
