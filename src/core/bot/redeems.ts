// The manual redeem from the chat (docs/reference/bot.md#commands): a confirmation (bot_redeems) shown with two
// buttons, started by the first press of Redeem as a job of channel `bot`, which the job worker
// runs like any async job; nothing is held or billed (redeem_create_job with channel bot). The
// confirmation row is the redeem's only idempotency: its state moves once from `confirming`, in
// the transaction that creates the job and records the pressed update.
import type { Queryable } from '../../db/database.ts';
import type { AccountState } from '../accounts/accounts.ts';
import { loadAccountState } from '../accounts/accounts.ts';
import { type Clock, utcDay } from '../clock.ts';
import type { Caller, RedeemDeps } from '../context.ts';
import { codeHash, decryptCode, encryptCode } from '../crypto/code-crypto.ts';
import { ApiError } from '../errors.ts';
import { newJobId, randomBase62 } from '../ids.ts';
import { INSTANCE_ID, LEASE_MS } from '../instance.ts';
import { createJob, drawStock, type NewCode } from '../jobs/create.ts';
import type { RedeemRequest, RedeemSelection } from '../redeem/request.ts';
import { categoryUc } from '../stock/catalog.ts';
import { chooseForUc } from '../stock/chooser.ts';
import { availableCounts } from '../stock/stock.ts';
import type { Mode } from '../vocabulary.ts';
import { cancelPendingTopups } from './topup-endings.ts';

/**
 * /cancel, in the update's own transaction: everything of the person still waiting ends, their
 * redeem confirmations and their live top-up requests of this customer (an invoice of one can no
 * longer be paid); returns how many of each.
 */
export async function cancelWaiting(
  tx: Queryable,
  who: { telegramUserId: number; customerId: number; now: Date },
): Promise<{ redeems: number; topups: number }> {
  const redeems = await cancelConfirmations(tx, who);
  return { redeems, topups: (await cancelPendingTopups(tx, who)).length };
}

/**
 * The person's confirmations still waiting for a press end (cancelled); returns how many. Their
 * messages keep their buttons, and a press on one answers that it was decided already.
 */
async function cancelConfirmations(
  q: Queryable,
  who: { telegramUserId: number; customerId: number; now: Date },
): Promise<number> {
  const r = await q.query(
    `update bot_redeems set state = 'cancelled', decided_at = $2, request = null
      where customer_id = $3 and telegram_user_id = $1 and state = 'confirming'`,
    [who.telegramUserId, who.now, who.customerId],
  );
  return r.rowCount;
}

/** A press of Redeem later than this runs nothing (docs/reference/bot.md#commands). */
export const CONFIRM_TTL_MS = 10 * 60 * 1000;

export interface BotCaller {
  /** The person's binding (bot_users.id): the confirmation is void once it ends. */
  botUserId: string;
  customerId: number;
  mode: Mode;
  telegramUserId: number;
  chatId: number;
}

/** What the confirmation shows (lines player_id, codes, source, uc). */
export interface RedeemSummary {
  player_id: string;
  codes: number;
  source: 'codes' | 'stock';
  uc: number | null;
  packs: { category: string; count: number }[] | null;
}

/** What the account allows a bot redeem (docs/reference/bot.md#commands): a disabled customer or a lapsed required subscription refuse it. */
function botRedeemRefusal(state: AccountState | null, now: Date): string | null {
  if (!state || state.disabled) return 'customer_disabled: this account is disabled; ask the operator';
  const sub = state.subscription;
  if (sub.required && sub.expiresAt && sub.expiresAt.getTime() <= now.getTime())
    return `subscription_expired: the bot subscription expired on ${sub.expiresAt.toISOString().slice(0, 10)}; renew it with the operator`;
  return null;
}

/** What /redeem made of a valid request: a confirmation waiting for its press, or a refusal of the account. */
export type BotRedeemAsk =
  | { kind: 'confirm'; id: string; summary: RedeemSummary }
  | { kind: 'refused'; line: string };

/**
 * /redeem, once its request is valid, in the update's own transaction `tx`: what the account
 * allows a bot redeem (a refusal is a value), the stock the request needs (`no_stock`, thrown as
 * step 11 of docs/reference/redeem.md#validation-order throws it), then the confirmation
 * recorded. Nothing is reserved until the press.
 */
export async function prepareBotRedeem(
  tx: Queryable,
  deps: { codeKey: Buffer; clock: Clock },
  caller: BotCaller,
  req: RedeemRequest,
): Promise<BotRedeemAsk> {
  const now = deps.clock.now();
  const state = await loadAccountState(tx, caller.customerId, caller.mode, utcDay(now));
  const refusal = botRedeemRefusal(state, now);
  if (refusal) return { kind: 'refused', line: refusal };
  const summary = await summaryOf(tx, caller, req);
  const id = await createConfirmation(tx, deps, caller, { playerId: req.playerId, selection: req, summary });
  return { kind: 'confirm', id, summary };
}

/** What the confirmation shows, with the stock check (no_stock) before anything is reserved. */
async function summaryOf(q: Queryable, caller: BotCaller, req: RedeemRequest): Promise<RedeemSummary> {
  if (req.source === 'codes')
    return { player_id: req.playerId, codes: req.codes.length, source: 'codes', uc: null, packs: null };
  const available = await availableCounts(q, caller.customerId, caller.mode);
  const picks = 'packs' in req ? req.packs : chooseForUc(req.uc, available);
  if (!picks || picks.some((p) => (available[p.category] ?? 0) < p.count))
    throw new ApiError('no_stock', 'not enough stock for this request; add codes with /addstock');
  return {
    player_id: req.playerId,
    codes: picks.reduce((n, p) => n + p.count, 0),
    source: 'stock',
    uc: picks.reduce((n, p) => n + p.count * categoryUc(p.category), 0),
    packs: picks.map((p) => ({ category: p.category, count: p.count })),
  };
}

/** Records a confirmation waiting for its press; the caller's codes are kept encrypted. */
async function createConfirmation(
  q: Queryable,
  deps: { codeKey: Buffer; clock: Clock },
  caller: BotCaller,
  input: { playerId: string; selection: RedeemSelection; summary: RedeemSummary },
): Promise<string> {
  const id = `br_${randomBase62(24)}`;
  const sel = input.selection;
  const context = (code: string) => ({
    table: 'bot_redeems' as const,
    customerId: caller.customerId,
    mode: caller.mode,
    codeHash: codeHash(deps.codeKey, code),
  });
  const request =
    sel.source === 'codes'
      ? {
          codes: sel.codes.map((code) => ({
            hash: codeHash(deps.codeKey, code),
            encrypted: encryptCode(deps.codeKey, code, context(code)),
          })),
        }
      : 'packs' in sel
        ? { packs: sel.packs }
        : { uc: sel.uc };
  await q.query(
    `insert into bot_redeems (id, customer_id, mode, telegram_user_id, chat_id, player_id, request, summary, state,
                              created_at, bot_user_id)
     values ($1, $2, $3, $4, $5, $6, $7, $8, 'confirming', $9, $10)`,
    [
      id,
      caller.customerId,
      caller.mode,
      caller.telegramUserId,
      caller.chatId,
      input.playerId,
      JSON.stringify(request),
      JSON.stringify(input.summary),
      deps.clock.now(),
      caller.botUserId,
    ],
  );
  return id;
}

export async function setConfirmationMessage(
  q: Queryable,
  confirmation: { id: string; customerId: number },
  messageId: number,
): Promise<void> {
  await q.query('update bot_redeems set message_id = $3 where customer_id = $1 and id = $2', [
    confirmation.customerId,
    confirmation.id,
    messageId,
  ]);
}

interface ConfirmationRow {
  id: string;
  customerId: number;
  mode: Mode;
  telegramUserId: number;
  chatId: number;
  messageId: number | null;
  playerId: string;
  request: {
    codes?: { hash: string; encrypted: string }[];
    packs?: { category: string; count: number }[];
    uc?: number;
  } | null;
  summary: RedeemSummary;
  state: string;
  botUserId: string | null;
  createdAt: Date;
}

/** What a press did; `mode` is the confirmation's (the person may have switched since). */
export type PressResult = { mode: Mode | null } & (
  | { kind: 'started'; jobId: string; summary: RedeemSummary; messageId: number | null; queued: boolean }
  | { kind: 'cancelled' }
  | { kind: 'gone'; why: 'done' | 'expired' | 'not_yours' | 'void' }
  | { kind: 'refused'; line: string }
);

/**
 * A press of Redeem or Cancel, in the update's own transaction `tx` (the caller recorded the
 * update there). Only the first press of a confirmation still `confirming`, by the person who
 * asked, within 10 minutes, does anything: Redeem creates the job (stock reserved, codes
 * encrypted into job_codes, nothing held), Cancel ends it.
 */
export async function pressConfirmation(
  tx: Queryable,
  deps: Pick<RedeemDeps, 'codeKey' | 'clock'>,
  input: {
    id: string;
    /** Who pressed, as the gate named them now. */
    presser: { botUserId: string; telegramUserId: number; customerId: number };
    action: 'redeem' | 'cancel';
    requestId: string;
  },
): Promise<PressResult> {
  const now = deps.clock.now();
  // The confirmation's customer first (it may be a former binding's), then its row locked on that
  // customer's worker (docs/running/citus.md#one-worker-per-statement).
  const owner = (
    await tx.query<{ customerId: number }>(
      'select customer_id as "customerId" from bot_redeems where id = $1',
      [input.id],
    )
  ).rows[0];
  const row = (
    await tx.query<ConfirmationRow>(
      `select id, customer_id as "customerId", mode, telegram_user_id as "telegramUserId", chat_id as "chatId",
              message_id as "messageId", player_id as "playerId", request, summary, state, created_at as "createdAt",
              bot_user_id as "botUserId"
         from bot_redeems where customer_id = $2 and id = $1 for update`,
      [input.id, owner?.customerId ?? null],
    )
  ).rows[0];
  if (!row || Number(row.telegramUserId) !== input.presser.telegramUserId)
    return { mode: null, kind: 'gone', why: 'not_yours' };
  const mode = row.mode;
  if (row.state !== 'confirming') return { mode, kind: 'gone', why: 'done' };
  const end = async (state: 'cancelled' | 'expired') =>
    tx.query(
      `update bot_redeems set state = $3, decided_at = $4, request = null where customer_id = $1 and id = $2`,
      [row.customerId, row.id, state, now],
    );
  // Made under another binding (the person was unbound, or bound to another customer, since): void.
  if (
    Number(row.customerId) !== input.presser.customerId ||
    (row.botUserId !== null && row.botUserId !== input.presser.botUserId)
  ) {
    await end('cancelled');
    return { mode, kind: 'gone', why: 'void' };
  }
  if (now.getTime() - new Date(row.createdAt).getTime() > CONFIRM_TTL_MS) {
    await end('expired');
    return { mode, kind: 'gone', why: 'expired' };
  }
  if (input.action === 'cancel') {
    await end('cancelled');
    return { mode, kind: 'cancelled' };
  }
  const caller = { customerId: Number(row.customerId), mode: row.mode };
  // Checked again at the press (docs/reference/bot.md#commands): the account may have changed since the confirmation.
  await tx.query('select account_lock($1, $2)', [caller.customerId, caller.mode]);
  const state = await loadAccountState(tx, caller.customerId, caller.mode, utcDay(now));
  const refusal = botRedeemRefusal(state, now);
  if (refusal) {
    await end('cancelled');
    return { mode, kind: 'refused', line: refusal };
  }
  const jobId = newJobId();
  const codes = await botJobCodes(tx, deps, caller, row, jobId);
  if (!codes) {
    await end('cancelled');
    return {
      mode,
      kind: 'refused',
      line: 'no_stock: not enough stock for this redeem; add codes with /addstock',
    };
  }
  await createBotJob(tx, deps, caller, { jobId, row, codes, requestId: input.requestId });
  const running = await tx.query(
    `select 1 from jobs where customer_id = $1 and mode = $2 and channel = 'bot' and status = 'running'`,
    [caller.customerId, caller.mode],
  );
  await tx.query(
    `update bot_redeems set state = 'started', job_id = $2, decided_at = $3, request = null,
            summary = summary || $4::jsonb
      where customer_id = $5 and id = $1`,
    [row.id, jobId, now, JSON.stringify({ codes: codes.length }), row.customerId],
  );
  return {
    mode,
    kind: 'started',
    jobId,
    summary: { ...row.summary, codes: codes.length },
    messageId: row.messageId === null ? null : Number(row.messageId),
    queued: running.rows.length > 0,
  };
}

/** The confirmation's codes: the caller's own (decrypted), or fresh stock drawn now; null: no stock. */
async function botJobCodes(
  tx: Queryable,
  deps: Pick<RedeemDeps, 'codeKey' | 'clock'>,
  caller: { customerId: number; mode: Mode },
  row: ConfirmationRow,
  jobId: string,
): Promise<NewCode[] | null> {
  const request = row.request ?? {};
  if (request.codes)
    return request.codes.map((c, position) => ({
      position,
      code: decryptCode(deps.codeKey, c.encrypted, {
        table: 'bot_redeems',
        customerId: caller.customerId,
        mode: caller.mode,
        codeHash: c.hash,
      }),
      stockId: null,
      category: null,
      uc: null,
    }));
  return drawStock(tx, deps, caller, request.packs ? { packs: request.packs } : { uc: request.uc! }, jobId);
}

/** The job of a bot redeem: queued for the worker, channel bot, nothing held or billed. */
async function createBotJob(
  tx: Queryable,
  deps: Pick<RedeemDeps, 'codeKey' | 'clock'>,
  caller: Caller,
  x: { jobId: string; row: ConfirmationRow; codes: NewCode[]; requestId: string },
): Promise<void> {
  const now = deps.clock.now();
  await createJob(tx, deps, {
    jobId: x.jobId,
    caller,
    now,
    day: utcDay(now),
    idempotencyKey: `bot:${x.row.id}`,
    fingerprint: '',
    requestId: x.requestId,
    async: true,
    source: x.row.request?.codes ? 'codes' : 'stock',
    playerId: x.row.playerId,
    reference: null,
    previousJobId: null,
    owner: INSTANCE_ID,
    leaseUntil: new Date(now.getTime() + LEASE_MS),
    expiresAt: now,
    sending: 0,
    codes: x.codes,
    channel: 'bot',
  });
}
