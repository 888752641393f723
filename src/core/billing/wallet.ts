// The wallet: an append-only ledger per customer and mode. `accounts.balance_micros` caches the
// ledger's sum and is only ever changed in the transaction that appends the entry.
import type { Queryable } from '../../db/database.ts';
import type { Mode } from '../accounts/accounts.ts';
import type { Clock } from '../clock.ts';
import { usdNumber } from './money.ts';

/** Creates the account row of a customer and mode if missing (the billing lock lives there). */
export async function ensureAccount(q: Queryable, customerId: number, mode: Mode): Promise<void> {
  await q.query(
    'insert into accounts (customer_id, mode) values ($1, $2) on conflict do nothing',
    [customerId, mode],
    'account_ensure',
  );
}

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

/** Appends a ledger entry and moves the cached balance with it; returns the new balance and the entry's id. */
export async function appendLedger(
  q: Queryable,
  entry: LedgerEntry,
  clock: Clock,
): Promise<{ balanceMicros: number; entryId: number }> {
  await ensureAccount(q, entry.customerId, entry.mode);
  const r = await q.query<{ balance: number }>(
    `update accounts set balance_micros = balance_micros + $3
      where customer_id = $1 and mode = $2 returning balance_micros as balance`,
    [entry.customerId, entry.mode, entry.amountMicros],
  );
  const balance = r.rows[0]!.balance;
  const inserted = await q.query<{ id: number }>(
    `insert into wallet_ledger (customer_id, mode, amount_micros, balance_after_micros, kind, note, reference, created_at,
                                actor, request_id)
     values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10) returning id`,
    [
      entry.customerId,
      entry.mode,
      entry.amountMicros,
      balance,
      entry.kind,
      entry.note ?? '',
      entry.reference ?? null,
      clock.now(),
      entry.actor ?? 'system',
      entry.requestId ?? null,
    ],
  );
  return { balanceMicros: balance, entryId: inserted.rows[0]!.id };
}

export async function walletSummary(q: Queryable, customerId: number) {
  const r = await q.query<{ mode: Mode; balance: number; held: number }>(
    'select mode, balance_micros as balance, held_micros as held from accounts where customer_id = $1',
    [customerId],
  );
  const out: Record<string, { balance_usd: number; held_usd: number; spendable_usd: number }> = {};
  for (const mode of ['live', 'test'] as const) {
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
