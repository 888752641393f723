// The audit log (docs/reference/operators-and-audit.md#audit-log): one append-only table (migration 0050 refuses update, delete and
// truncate), one row per successful admin change. `recordAudit` is called by the core function
// that makes the change, with the transaction handle of that change, so the row exists exactly
// when the change committed.
import type { Queryable } from '../../db/database.ts';
import { type Clock, isoUtc } from '../clock.ts';
import { encodeCursor } from '../cursor.ts';
import { randomBase62 } from '../ids.ts';
import type { Actor } from './actor.ts';

export const AUDIT_ACTIONS = [
  'customer.create',
  'customer.disable',
  'customer.enable',
  'plan.set',
  'plan.delete',
  'subscription.set',
  'key.issue',
  'key.revoke',
  'key.reroll',
  'wallet.topup',
  'wallet.adjust',
  'stock.import',
  'quarantine.settle',
  'event.redeliver',
  'webhook.remove',
  'operator.create',
  'operator.revoke',
  'encryption.rotate',
  'bot.link',
  'bot.bind',
  'bot.unbind',
  'topup.reject',
  'topup.unmatched',
  'backup.create',
] as const;
export type AuditAction = (typeof AUDIT_ACTIONS)[number];

export interface AuditEntry {
  action: AuditAction;
  customerId: number | null;
  target: string | null;
  /** What changed. Never a key, token, secret or code. */
  details: Record<string, unknown>;
}

export const newAuditId = () => `aud_${randomBase62(24)}`;

/** Appends the audit row of a change; `q` must be the change's own transaction. */
export async function recordAudit(
  q: Queryable,
  actor: Actor,
  entry: AuditEntry,
  clock: Clock,
): Promise<void> {
  await q.query(
    `insert into audit_events (id, at, actor, action, customer_id, target, request_id, ip, details)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9)`,
    [
      newAuditId(),
      clock.now(),
      actor.name,
      entry.action,
      entry.customerId,
      entry.target,
      actor.requestId,
      actor.ip,
      JSON.stringify(entry.details),
    ],
  );
}

export interface AuditFilter {
  customerId?: number | undefined;
  actor?: string | undefined;
  action?: string | undefined;
  /** The `seq` of the last row of the previous page. */
  beforeSeq?: number | undefined;
  limit: number;
}

/** A page of audit events, newest first, and the cursor of the next page (null at the end). */
export async function auditPage(q: Queryable, f: AuditFilter) {
  const r = await q.query<{
    seq: number;
    id: string;
    at: Date;
    actor: string;
    action: string;
    customerId: number | null;
    target: string | null;
    requestId: string;
    ip: string;
    details: Record<string, unknown> | string;
  }>(
    `select seq, id, at, actor, action, customer_id as "customerId", target, request_id as "requestId", ip, details
       from audit_events
      where ($1::bigint is null or customer_id = $1) and ($2::text is null or actor = $2)
        and ($3::text is null or action = $3) and ($4::bigint is null or seq < $4)
      order by seq desc limit $5`,
    [f.customerId ?? null, f.actor ?? null, f.action ?? null, f.beforeSeq ?? null, f.limit + 1],
  );
  const rows = r.rows.slice(0, f.limit);
  return {
    events: rows.map((e) => ({
      id: e.id,
      at: isoUtc(e.at),
      actor: e.actor,
      action: e.action,
      customer_id: e.customerId,
      target: e.target,
      request_id: e.requestId,
      ip: e.ip,
      details: typeof e.details === 'string' ? JSON.parse(e.details) : e.details,
    })),
    next_cursor: r.rows.length > f.limit ? encodeCursor([rows.at(-1)!.seq]) : null,
  };
}
