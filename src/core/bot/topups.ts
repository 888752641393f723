// Wallet top-ups from the chat (docs/reference/bot.md#top-ups). Test mode credits the test wallet at once; a live
// top-up is a request (`tpr_…`, pending for 7 days) paid with a Telegram invoice (topup-payments.ts)
// or decided by an operator. Every credit is one ledger entry through appendLedger (the one writer
// of the ledger), with its audit row, in one transaction: an approval once per request (its state
// moves once from `pending`).
//
// A pending request belongs to the person who asked (their bot_users row) and to the customer:
// unbinding the person, binding them elsewhere (or again as staff), disabling the customer or the
// person's /cancel voids it, in the transaction of that change. A voided request shows the state
// `rejected`, decided_by the one who made the change and a reason starting with `voided:`; it
// can no longer be paid or approved.
import type { Queryable } from '../../db/database.ts';
import { loadAccountState, spendableMicros } from '../accounts/accounts.ts';
import { appendLedger, recentLedgerEntries } from '../billing/wallet.ts';
import { type Clock, isoUtc, utcDay } from '../clock.ts';
import { ApiError } from '../errors.ts';
import { randomBase62 } from '../ids.ts';
import { usdNumber } from '../money.ts';
import type { Actor } from '../operators/actor.ts';
import { recordAudit } from '../operators/audit.ts';
import type { Mode } from '../vocabulary.ts';

export const TOPUP_TTL_MS = 7 * 24 * 3600 * 1000;
export const MIN_TOPUP_MICROS = 1_000_000;
export const MAX_TOPUP_MICROS = 10_000 * 1_000_000;

export type TopupState = 'pending' | 'paid' | 'approved' | 'rejected' | 'expired';
/** The states GET /admin/v1/topup-requests filters on: a request's, or an unmatched payment's. */
export const TOPUP_LIST_STATES = ['pending', 'paid', 'approved', 'rejected', 'expired', 'unmatched'] as const;
export type TopupListState = (typeof TOPUP_LIST_STATES)[number];

/** `/topup <usd>`'s amount: 1 to 10,000 with at most 2 decimals, as micro-dollars; null otherwise. */
export function parseTopupUsd(text: string): number | null {
  const m = /^(\d{1,5})(?:\.(\d{1,2}))?$/.exec(text.trim());
  if (!m) return null;
  const micros = Number(m[1]) * 1_000_000 + Number((m[2] ?? '').padEnd(2, '0')) * 10_000;
  return micros >= MIN_TOPUP_MICROS && micros <= MAX_TOPUP_MICROS ? micros : null;
}

export interface TopupRow {
  id: string;
  customerId: number;
  mode: Mode;
  usdMicros: number;
  state: TopupState;
  telegramUserId: number;
  chatId: number;
  createdAt: Date;
  expiresAt: Date;
  decidedAt: Date | null;
  decidedBy: string | null;
  reason: string | null;
}

export const COLUMNS = `id, customer_id as "customerId", mode, usd_micros as "usdMicros", state,
  telegram_user_id as "telegramUserId", chat_id as "chatId", created_at as "createdAt", expires_at as "expiresAt",
  decided_at as "decidedAt", decided_by as "decidedBy", reason`;

export function rowFrom(r: TopupRow): TopupRow {
  return {
    ...r,
    customerId: Number(r.customerId),
    usdMicros: Number(r.usdMicros),
    telegramUserId: Number(r.telegramUserId),
    chatId: Number(r.chatId),
  };
}

/** A request as the admin API shows it. */
export function topupView(r: TopupRow) {
  return {
    id: r.id,
    customer_id: r.customerId,
    mode: r.mode,
    usd: usdNumber(r.usdMicros),
    state: r.state,
    telegram_user_id: r.telegramUserId,
    created_at: isoUtc(r.createdAt),
    decided_at: r.decidedAt ? isoUtc(r.decidedAt) : null,
    decided_by: r.decidedBy,
    reason: r.reason,
  };
}

/**
 * A top-up credited: one `topup` ledger entry through appendLedger (the one writer of the
 * ledger) and its `wallet.topup` audit row, in the caller's transaction. Returns the entry's id.
 */
export async function creditTopup(
  tx: Queryable,
  clock: Clock,
  actor: Actor,
  x: {
    customerId: number;
    mode: Mode;
    usdMicros: number;
    note: string;
    reference?: string;
    details?: object;
  },
): Promise<number> {
  const { entryId } = await appendLedger(
    tx,
    {
      customerId: x.customerId,
      mode: x.mode,
      amountMicros: x.usdMicros,
      kind: 'topup',
      note: x.note,
      reference: x.reference ?? null,
      actor: actor.name,
      requestId: actor.requestId,
    },
    clock,
  );
  await recordAudit(
    tx,
    actor,
    {
      action: 'wallet.topup',
      customerId: x.customerId,
      target: String(entryId),
      details: { mode: x.mode, amount_usd: usdNumber(x.usdMicros), note: x.note, ...x.details },
    },
    clock,
  );
  return entryId;
}

/**
 * The person's test wallet credited at once (test money, as a test key's world is); returns what
 * the test wallet may spend now.
 */
export async function creditTestTopup(
  tx: Queryable,
  clock: Clock,
  actor: Actor,
  input: { customerId: number; usdMicros: number },
): Promise<number> {
  await creditTopup(tx, clock, actor, {
    customerId: input.customerId,
    mode: 'test',
    usdMicros: input.usdMicros,
    note: 'test top-up from the chat bot',
  });
  return spendableBalance(tx, clock, input.customerId, 'test');
}

/** What a wallet may spend now (its balance less its holds): the balance the bot's replies show. */
export async function spendableBalance(q: Queryable, clock: Clock, customerId: number, mode: Mode) {
  const state = await loadAccountState(q, customerId, mode, utcDay(clock.now()));
  return state ? spendableMicros(state) : 0;
}

/** /wallet: what the wallet may spend, its 10 newest ledger entries and the pending top-up requests. */
export async function walletOverview(q: Queryable, clock: Clock, customerId: number, mode: Mode) {
  return {
    balanceMicros: await spendableBalance(q, clock, customerId, mode),
    entries: await recentLedgerEntries(q, customerId, mode, 10),
    pending: await pendingTopups(q, customerId),
  };
}

/** A live top-up request of the person (their binding) for the customer, pending for 7 days. */
export async function createTopupRequest(
  tx: Queryable,
  clock: Clock,
  input: { customerId: number; usdMicros: number; botUserId: string; telegramUserId: number; chatId: number },
): Promise<TopupRow> {
  const now = clock.now();
  const r = await tx.query<TopupRow>(
    `insert into topup_requests (id, customer_id, mode, usd_micros, state, bot_user_id, telegram_user_id, chat_id,
                                 created_at, expires_at)
     values ($1, $2, 'live', $3, 'pending', $4, $5, $6, $7, $8) returning ${COLUMNS}`,
    [
      `tpr_${randomBase62(24)}`,
      input.customerId,
      input.usdMicros,
      input.botUserId,
      input.telegramUserId,
      input.chatId,
      now,
      new Date(now.getTime() + TOPUP_TTL_MS),
    ],
  );
  return rowFrom(r.rows[0]!);
}

export async function listTopupRequests(
  q: Queryable,
  f: { state?: TopupState; customerId?: number; limit?: number },
) {
  const r = await q.query<TopupRow>(
    `select ${COLUMNS} from topup_requests
      where ($1::text is null or state = $1) and ($2::bigint is null or customer_id = $2)
      order by created_at desc, id desc limit $3`,
    [f.state ?? null, f.customerId ?? null, f.limit ?? 100],
  );
  return r.rows.map(rowFrom);
}

/** A customer's pending requests (the /wallet reply). */
export async function pendingTopups(q: Queryable, customerId: number) {
  return listTopupRequests(q, { state: 'pending', customerId, limit: 10 });
}

/** A request by id, unlocked (the pre-checkout only reads it). */
export async function findRequest(q: Queryable, id: string): Promise<TopupRow | null> {
  const r = await q.query<TopupRow>(`select ${COLUMNS} from topup_requests where id = $1`, [id]);
  return r.rows[0] ? rowFrom(r.rows[0]) : null;
}

/** Locked: its customer read first, then its row on that customer's worker (docs/running/citus.md). */
export async function lockRequest(tx: Queryable, id: string): Promise<TopupRow | null> {
  const owner = await tx.query<{ customerId: number }>(
    'select customer_id as "customerId" from topup_requests where id = $1',
    [id],
  );
  const customerId = owner.rows[0]?.customerId;
  if (customerId === undefined) return null;
  const r = await tx.query<TopupRow>(
    `select ${COLUMNS} from topup_requests where customer_id = $1 and id = $2 for update`,
    [customerId, id],
  );
  return r.rows[0] ? rowFrom(r.rows[0]) : null;
}

/** A pending request past its 7 days is expired on the way (and cannot be decided any more). */
async function stillPending(tx: Queryable, row: TopupRow, now: Date): Promise<boolean> {
  if (row.state !== 'pending') return false;
  if (row.expiresAt.getTime() > now.getTime()) return true;
  await tx.query(
    `update topup_requests set state = 'expired', decided_at = $3 where customer_id = $1 and id = $2`,
    [row.customerId, row.id, now],
  );
  row.state = 'expired';
  return false;
}

/**
 * The operator approves a pending request: the wallet is credited once, however often this is
 * sent (an approved request answers as it did, crediting nothing more).
 */
export async function approveTopup(
  deps: { db: { transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> }; clock: Clock },
  actor: Actor,
  id: string,
): Promise<{ request: TopupRow; credited: boolean }> {
  return deps.db.transaction(async (tx) => {
    const now = deps.clock.now();
    const row = await lockRequest(tx, id);
    if (!row) throw new ApiError('not_found', 'unknown top-up request');
    if (row.state === 'approved') return { request: row, credited: false };
    if (!(await stillPending(tx, row, now)))
      throw new ApiError('conflict', `the top-up request is ${row.state}, not pending`);
    const note = `top-up request ${row.id}`;
    await creditTopup(tx, deps.clock, actor, {
      customerId: row.customerId,
      mode: row.mode,
      usdMicros: row.usdMicros,
      note,
      reference: row.id,
      details: { topup_request: row.id },
    });
    await tx.query(
      `update topup_requests set state = 'approved', decided_at = $3, decided_by = $4 where customer_id = $1 and id = $2`,
      [row.customerId, row.id, now, actor.name],
    );
    return {
      request: { ...row, state: 'approved', decidedAt: now, decidedBy: actor.name, reason: null },
      credited: true,
    };
  });
}

/** The operator rejects a pending request with a reason; nothing is credited. */
export async function rejectTopup(
  deps: { db: { transaction<T>(fn: (tx: Queryable) => Promise<T>): Promise<T> }; clock: Clock },
  actor: Actor,
  id: string,
  reason: string,
): Promise<TopupRow> {
  return deps.db.transaction(async (tx) => {
    const now = deps.clock.now();
    const row = await lockRequest(tx, id);
    if (!row) throw new ApiError('not_found', 'unknown top-up request');
    if (!(await stillPending(tx, row, now)))
      throw new ApiError('conflict', `the top-up request is ${row.state}, not pending`);
    await tx.query(
      `update topup_requests set state = 'rejected', decided_at = $3, decided_by = $4, reason = $5
        where customer_id = $1 and id = $2`,
      [row.customerId, row.id, now, actor.name, reason],
    );
    await recordAudit(
      tx,
      actor,
      {
        action: 'topup.reject',
        customerId: row.customerId,
        target: row.id,
        details: { mode: row.mode, amount_usd: usdNumber(row.usdMicros), reason },
      },
      deps.clock,
    );
    return { ...row, state: 'rejected', decidedAt: now, decidedBy: actor.name, reason };
  });
}

/** The invoice's amount in the currency's smallest unit (two decimals: cents). */
export const invoiceAmount = (usdMicros: number) => Math.round(usdMicros / 10_000);
