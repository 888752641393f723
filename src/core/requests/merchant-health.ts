// A merchant's health as an operator first needs it, live and test side by side: each mode's
// webhook receiver (its URL, success over the last day, failures in a row, failing since) and the
// mode's refusals today by error code; and which mode has trouble first, so a page about the
// merchant opens on the mode that is on fire rather than on live with zeros.
import type { Queryable } from '../../db/database.ts';
import { type Clock, isoUtc } from '../clock.ts';
import type { Mode } from '../vocabulary.ts';
import { maskWebhookUrl, type ReceiverHealth, receiversOf } from '../webhooks/event-overview.ts';
import { utcDay } from './request-log.ts';

export interface ModeHealth {
  webhook: ReceiverHealth | null;
  refusals_today: { total: number; by_error_code: { error_code: string | null; count: number }[] };
}

export interface MerchantHealth {
  day: string;
  /** The mode to look at first: a failing receiver, else more refusals today; null when both are quiet. */
  trouble_first: Mode | null;
  modes: Record<Mode, ModeHealth>;
}

/** How bad a mode looks: a failing receiver first, then its refusals today. */
const trouble = (m: ModeHealth) => [m.webhook?.consecutive_failures ?? 0, m.refusals_today.total] as const;

export function troubleFirst(modes: Record<Mode, ModeHealth>): Mode | null {
  const [lf, lr] = trouble(modes.live);
  const [tf, tr] = trouble(modes.test);
  if (lf === 0 && tf === 0 && lr === 0 && tr === 0) return null;
  if (lf > 0 !== tf > 0) return lf > 0 ? 'live' : 'test';
  return tr > lr ? 'test' : 'live';
}

export async function merchantHealth(
  q: Queryable,
  customerId: number,
  clock: Clock,
): Promise<MerchantHealth> {
  const day = utcDay(clock.now());
  const start = new Date(`${day}T00:00:00Z`);
  // One customer's rows of one day: an index range of request_log_by_customer, bounded by the
  // daily cap.
  const [receivers, r] = await Promise.all([
    receiversOf(q, customerId, clock),
    q.query<{ mode: Mode | null; errorCode: string | null; n: number }>(
      `select mode, error_code as "errorCode", count(*)::int as n
         from request_log
        where customer_id = $1 and at >= $2 and at < $3
        group by mode, error_code order by n desc, error_code`,
      [customerId, start, new Date(start.getTime() + 86_400_000)],
    ),
  ]);
  const modes: Record<Mode, ModeHealth> = {
    live: { webhook: receivers.live, refusals_today: { total: 0, by_error_code: [] } },
    test: { webhook: receivers.test, refusals_today: { total: 0, by_error_code: [] } },
  };
  for (const row of r.rows) {
    if (row.mode !== 'live' && row.mode !== 'test') continue;
    const refusals = modes[row.mode].refusals_today;
    refusals.total += Number(row.n);
    refusals.by_error_code.push({ error_code: row.errorCode, count: Number(row.n) });
  }
  return { day, trouble_first: troubleFirst(modes), modes };
}

/** A mode's health in a list of customers: its receiver's run of failures and today's refusals. */
export interface ModeHealthInList {
  webhook: { url: string; consecutive_failures: number; failing_since: string | null } | null;
  refused_today: number;
  /** Today's refusals by error code, most first (`null`: an answer without one). */
  refused_by_error_code: { error_code: string | null; count: number }[];
}

/**
 * The health of a page of customers (the customers list), in two statements whatever the page's
 * size: their receivers with their runs of failures, and their refusals today by mode.
 */
export async function healthOfCustomers(
  q: Queryable,
  customerIds: readonly number[],
  clock: Clock,
): Promise<Map<number, Record<Mode, ModeHealthInList>>> {
  const out = new Map<number, Record<Mode, ModeHealthInList>>();
  for (const id of customerIds)
    out.set(id, {
      live: { webhook: null, refused_today: 0, refused_by_error_code: [] },
      test: { webhook: null, refused_today: 0, refused_by_error_code: [] },
    });
  if (customerIds.length === 0) return out;
  const start = new Date(`${utcDay(clock.now())}T00:00:00Z`);
  const [hooks, refusals] = await Promise.all([
    q.query<{
      customerId: number;
      mode: Mode;
      url: string;
      failures: number | null;
      failingSince: Date | null;
    }>(
      `select w.customer_id as "customerId", w.mode, w.url, h.consecutive_failures as failures,
              h.failing_since as "failingSince"
         from webhooks w
         left join webhook_receiver_health h on h.customer_id = w.customer_id and h.mode = w.mode
        where w.customer_id = any($1::bigint[])`,
      [customerIds],
    ),
    q.query<{ customerId: number; mode: Mode | null; errorCode: string | null; n: number }>(
      `select customer_id as "customerId", mode, error_code as "errorCode", count(*)::int as n
         from request_log
        where customer_id = any($1::bigint[]) and at >= $2 and at < $3
        group by customer_id, mode, error_code order by n desc, error_code`,
      [customerIds, start, new Date(start.getTime() + 86_400_000)],
    ),
  ]);
  for (const row of hooks.rows) {
    const h = out.get(Number(row.customerId));
    if (!h) continue;
    const failures = row.failures ?? 0;
    h[row.mode].webhook = {
      url: maskWebhookUrl(row.url),
      consecutive_failures: failures,
      failing_since: failures > 0 && row.failingSince ? isoUtc(new Date(row.failingSince)) : null,
    };
  }
  for (const row of refusals.rows) {
    const h = out.get(Number(row.customerId));
    if (!h || (row.mode !== 'live' && row.mode !== 'test')) continue;
    h[row.mode].refused_today += Number(row.n);
    h[row.mode].refused_by_error_code.push({ error_code: row.errorCode, count: Number(row.n) });
  }
  return out;
}
