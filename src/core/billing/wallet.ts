// The wallet: an append-only ledger per customer and mode. `accounts.balance_micros` caches the
// ledger's sum and is only ever changed by the SQL function that appends the entry
// (src/db/functions/billing.sql).
import type { Queryable } from '../../db/database.ts';
import type { Clock } from '../clock.ts';
import { usdNumber } from '../money.ts';
import { MODES, type Mode } from '../vocabulary.ts';

/** A ledger entry to append. */
export interface LedgerEntry {
  customerId: number;
  mode: Mode;
  amountMicros: number;
  kind: 'topup' | 'charge' | 'adjustment';
  note?: string;
  reference?: string | null;
  /** The operator's name, or `system` (the default) for the service's own entries. */
  actor?: string;
  /** The request that caused the entry (the admin answer's X-Request-Id, a redeem's). */
  requestId?: string | null;
}

/**
 * Appends a ledger entry and moves the cached balance with it (SQL ledger_append, the one writer
 * of the ledger); returns the new entry's id.
 */
export async function appendLedger(
  q: Queryable,
  entry: LedgerEntry,
  clock: Clock,
): Promise<{ entryId: number }> {
  const r = await q.query<{ entryId: number }>(
    'select ledger_append($1, $2, $3, $4, $5, $6, $7, $8, $9) as "entryId"',
    [
      entry.customerId,
      entry.mode,
      entry.amountMicros,
      entry.kind,
      entry.note ?? '',
      entry.reference ?? null,
      clock.now(),
      entry.actor ?? 'system',
      entry.requestId ?? null,
    ],
  );
  return { entryId: r.rows[0]!.entryId };
}

/** The newest ledger entries of a wallet (the bot's /wallet), newest first. */
export async function recentLedgerEntries(
  q: Queryable,
  customerId: number,
  mode: Mode,
  limit: number,
): Promise<{ at: Date; kind: string; amount: number }[]> {
  const r = await q.query<{ at: Date; kind: string; amount: number }>(
    `select created_at as at, kind, amount_micros as amount from wallet_ledger
      where customer_id = $1 and mode = $2 order by id desc limit $3`,
    [customerId, mode, limit],
  );
  return r.rows;
}

export async function walletSummary(q: Queryable, customerId: number) {
  const r = await q.query<{ mode: Mode; balance: number; held: number }>(
    'select mode, balance_micros as balance, held_micros as held from accounts where customer_id = $1',
    [customerId],
  );
  const out: Record<string, { balance_usd: number; held_usd: number; spendable_usd: number }> = {};
  for (const mode of MODES) {
    const row = r.rows.find((x) => x.mode === mode);
    const balance = row?.balance ?? 0;
    const held = row?.held ?? 0;
    out[mode] = {
      balance_usd: usdNumber(balance),
      held_usd: usdNumber(held),
      spendable_usd: usdNumber(balance - held),
    };
  }
  return out;
}
