// Paged lists for the operator (admin API, console): customers by name or id, jobs by filters,
// and a customer's wallet ledger. Each page is read by keyset (the last row's sort key), so a
// page costs the same at the start and deep into a long history.
import type { Queryable } from '../../db/database.ts';
import { isoUtc } from '../clock.ts';
import { encodeCursor } from '../cursor.ts';
import { usdNumber } from '../money.ts';
import type { JobStatus, Mode } from '../vocabulary.ts';

const likePattern = (s: string) => `%${s.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;

/** Customers whose name contains `q` (any case) or whose id is `q`, newest first. */
export async function listCustomers(
  q: Queryable,
  opts: { search?: string | undefined; afterId?: number | undefined; limit: number },
) {
  const search = opts.search?.trim() || null;
  const r = await q.query<{
    id: number;
    name: string;
    createdAt: Date;
    disabledAt: Date | null;
    planLabel: string | null;
    planActive: boolean | null;
  }>(
    `select c.id, c.name, c.created_at as "createdAt", c.disabled_at as "disabledAt",
            p.label as "planLabel", p.active as "planActive"
       from customers c left join plans p on p.customer_id = c.id
      where ($1::text is null or c.name ilike $2 or c.id::text = $1)
        and ($3::bigint is null or c.id < $3)
      order by c.id desc limit $4`,
    [search, search === null ? null : likePattern(search), opts.afterId ?? null, opts.limit + 1],
  );
  const rows = r.rows.slice(0, opts.limit);
  return {
    customers: rows.map((c) => ({
      customer_id: c.id,
      name: c.name,
      created_at: isoUtc(c.createdAt),
      disabled: c.disabledAt !== null,
      plan: c.planLabel === null ? null : { label: c.planLabel, active: c.planActive },
    })),
    next_cursor: r.rows.length > opts.limit ? encodeCursor([rows.at(-1)!.id]) : null,
  };
}

/** One page of a customer's wallet ledger, newest first; `beforeId` continues a page. */
export async function ledgerPage(
  q: Queryable,
  customerId: number,
  mode: Mode,
  opts: { beforeId?: number | undefined; limit: number },
) {
  const r = await q.query<{
    id: number;
    amountMicros: number;
    balanceAfterMicros: number;
    kind: string;
    note: string;
    reference: string | null;
    createdAt: Date;
    actor: string;
    requestId: string | null;
  }>(
    `select id, amount_micros as "amountMicros", balance_after_micros as "balanceAfterMicros", kind, note,
            reference, created_at as "createdAt", actor, request_id as "requestId"
       from wallet_ledger
      where customer_id = $1 and mode = $2 and ($3::bigint is null or id < $3)
      order by id desc limit $4`,
    [customerId, mode, opts.beforeId ?? null, opts.limit + 1],
  );
  const rows = r.rows.slice(0, opts.limit);
  return {
    // entry_id, actor, request_id and at are the ledger's fields (docs/reference/billing-and-quota.md#the-wallet-ledger); id and created_at the older names.
    entries: rows.map((e) => ({
      entry_id: e.id,
      id: e.id,
      kind: e.kind,
      amount_usd: usdNumber(e.amountMicros),
      balance_after_usd: usdNumber(e.balanceAfterMicros),
      actor: e.actor,
      request_id: e.requestId,
      note: e.note,
      reference: e.reference,
      at: isoUtc(e.createdAt),
      created_at: isoUtc(e.createdAt),
    })),
    next_cursor: r.rows.length > opts.limit ? encodeCursor([rows.at(-1)!.id]) : null,
  };
}

export interface JobFilter {
  customerId?: number | undefined;
  mode?: Mode | undefined;
  status?: JobStatus | undefined;
  playerId?: string | undefined;
  /** created_at range: from inclusive, to exclusive. */
  from?: Date | undefined;
  to?: Date | undefined;
  /** Continue after this job (created_at, id), newest first. */
  after?: { createdAt: Date; id: string } | undefined;
  limit: number;
}

/** Jobs (sync and async) newest first, with their outcome counts and billing; no codes. */
export async function listJobs(q: Queryable, f: JobFilter) {
  const r = await q.query<{
    id: string;
    customerId: number;
    mode: Mode;
    isAsync: boolean;
    status: JobStatus;
    source: string;
    playerId: string;
    reference: string | null;
    total: number;
    createdAt: Date;
    finishedAt: Date | null;
    billed: number;
    refunded: number;
    done: number;
    customerName: string;
    activated: number;
    billedFailures: number;
    refundedCodes: number;
    quarantined: number;
  }>(
    `select j.id, j.customer_id as "customerId", j.mode, j.is_async as "isAsync", j.status, j.source,
            j.player_id as "playerId", j.reference, j.total, j.created_at as "createdAt",
            j.finished_at as "finishedAt", j.captured_included + j.captured_wallet as billed,
            j.released_included + j.released_wallet as refunded,
            o.done, cu.name as "customerName", o.activated, o.billed_failures as "billedFailures",
            o.refunded as "refundedCodes", o.quarantined
       from jobs j
       join customers cu on cu.id = j.customer_id
       -- What went wrong, per outcome: billed failures (code_used, invalid_code), refunded
       -- (bad_player, failed), and quarantined codes still waiting for their settlement.
       cross join lateral (
         select count(*)::int as done,
                count(*) filter (where c.status = 'activated')::int as activated,
                count(*) filter (where c.billed is true and c.status <> 'activated')::int as billed_failures,
                count(*) filter (where c.billed is not true
                                   and not (c.disposition = 'quarantined' and c.settled_at is null))::int as refunded,
                count(*) filter (where c.disposition = 'quarantined' and c.settled_at is null)::int as quarantined
           from job_codes c where c.customer_id = j.customer_id and c.job_id = j.id and c.state = 'done' and not c.reused) o
      where ($1::bigint is null or j.customer_id = $1) and ($2::text is null or j.mode = $2)
        and ($3::text is null or j.status = $3)
        and ($4::timestamptz is null or j.created_at >= $4) and ($5::timestamptz is null or j.created_at < $5)
        and ($6::timestamptz is null or (j.created_at, j.id) < ($6, $7::text))
        and ($9::text is null or j.player_id = $9)
      order by j.created_at desc, j.id desc limit $8`,
    [
      f.customerId ?? null,
      f.mode ?? null,
      f.status ?? null,
      f.from ?? null,
      f.to ?? null,
      f.after?.createdAt ?? null,
      f.after?.id ?? null,
      f.limit + 1,
      f.playerId ?? null,
    ],
  );
  const rows = r.rows.slice(0, f.limit);
  const last = rows.at(-1);
  return {
    jobs: rows.map((j) => ({
      job_id: j.id,
      customer_id: j.customerId,
      customer_name: j.customerName,
      mode: j.mode,
      async: j.isAsync,
      status: j.status,
      source: j.source,
      player_id: j.playerId,
      reference: j.reference,
      codes: j.total,
      done: j.done,
      billed_requests: j.billed,
      refunded_requests: j.refunded,
      outcomes: {
        activated: j.activated,
        billed_failures: j.billedFailures,
        refunded: j.refundedCodes,
        quarantined: j.quarantined,
      },
      attention: jobAttention(j),
      created_at: isoUtc(j.createdAt),
      finished_at: j.finishedAt ? isoUtc(j.finishedAt) : null,
    })),
    // created_at comes from the service's clock (milliseconds), so the ISO string is exact.
    next_cursor:
      r.rows.length > f.limit && last ? encodeCursor([last.createdAt.toISOString(), last.id]) : null,
  };
}

/**
 * Why a job needs a look although its status may be `completed` (a job completes whatever its
 * codes' outcomes): a quarantined code waits for its settlement, or a finished job activated
 * nothing. Null when neither.
 */
export function jobAttention(j: {
  status: JobStatus;
  total: number;
  activated: number;
  quarantined: number;
}): 'quarantined' | 'nothing_activated' | null {
  if (j.quarantined > 0) return 'quarantined';
  if (j.status !== 'queued' && j.status !== 'running' && j.total > 0 && j.activated === 0)
    return 'nothing_activated';
  return null;
}
