// Telegram payments of top-up invoices (docs/reference/bot.md#top-ups): the pre-checkout verdict, and each payment
// recorded once per telegram_payment_charge_id (topup_payments), credited or unmatched.
//
// A payment credits what was paid, and only to the customer of a pending request the payer owns
// now: its total_amount and currency equal the request's invoice, the request is pending (not
// expired, paid or voided), and the payer is a currently linked owner of the request's customer,
// which is not disabled. Anything else credits nothing and is kept as `unmatched`, with what
// Telegram said about it (charge ids, amount, currency, payer, payload), for an operator to refund;
// GET /admin/v1/topup-requests lists it in the requests' shape with state `unmatched`.
import type { Queryable } from '../../db/database.ts';
import { type Clock, isoUtc } from '../clock.ts';
import { randomBase62 } from '../ids.ts';
import type { Actor } from '../operators/actor.ts';
import { recordAudit } from '../operators/audit.ts';
import {
  creditTopup,
  findRequest,
  invoiceAmount,
  listTopupRequests,
  lockRequest,
  spendableBalance,
  type TopupListState,
  type TopupRow,
  topupView,
} from './topups.ts';

/** Why a payment (or its pre-checkout) matches no request it may pay. */
export type Mismatch = 'unknown_request' | 'not_owner' | 'not_pending' | 'amount_mismatch';

export interface PaymentInput {
  /** The invoice payload: the request id the bot put there (anything, when forged). */
  payload: string;
  totalAmount: number;
  currency: string;
  /** BOT_PAYMENT_CURRENCY, the currency every invoice is sent in. */
  expectedCurrency: string;
  telegramUserId: number;
}

interface Payer {
  customerId: number;
  role: string;
  disabled: boolean;
}

async function payerOf(q: Queryable, telegramUserId: number): Promise<Payer | null> {
  const r = await q.query<Payer>(
    `select u.customer_id as "customerId", u.role, c.disabled_at is not null as disabled
       from bot_users u join customers c on c.id = u.customer_id
      where u.telegram_user_id = $1 and u.unbound_at is null`,
    [telegramUserId],
  );
  return r.rows[0] ? { ...r.rows[0], customerId: Number(r.rows[0].customerId) } : null;
}

/**
 * Whether the payer may pay the request the payload names, for that amount and currency. Who may
 * pay is checked before anything about the request, so a stranger learns nothing of it.
 */
async function verdict(
  q: Queryable,
  now: Date,
  input: PaymentInput,
  request: TopupRow | null,
): Promise<{ mismatch: Mismatch | null; payer: Payer | null }> {
  const payer = await payerOf(q, input.telegramUserId);
  if (!request) return { mismatch: 'unknown_request', payer };
  if (!payer || payer.customerId !== request.customerId || payer.role !== 'owner' || payer.disabled)
    return { mismatch: 'not_owner', payer };
  if (request.state !== 'pending' || request.expiresAt.getTime() <= now.getTime())
    return { mismatch: 'not_pending', payer };
  if (input.currency !== input.expectedCurrency || input.totalAmount !== invoiceAmount(request.usdMicros))
    return { mismatch: 'amount_mismatch', payer };
  return { mismatch: null, payer };
}

const looksLikeRequestId = (payload: string) => /^tpr_[A-Za-z0-9]{1,40}$/.test(payload);

/** The pre-checkout's answer: null to accept, else the plain line Telegram shows the payer. */
export async function preCheckoutRefusal(
  q: Queryable,
  now: Date,
  input: PaymentInput,
): Promise<string | null> {
  const row = looksLikeRequestId(input.payload) ? await findRequest(q, input.payload) : null;
  const { mismatch } = await verdict(q, now, input, row);
  if (mismatch === null) return null;
  const state =
    row?.state === 'pending'
      ? 'expired'
      : row?.state === 'rejected' && row.reason?.startsWith('voided:')
        ? 'cancelled'
        : (row?.state ?? '');
  return PRE_CHECKOUT_REFUSALS[mismatch](state);
}

const PRE_CHECKOUT_REFUSALS: Record<Mismatch, (state: string) => string> = {
  unknown_request: () => 'This top-up request is unknown; nothing was charged.',
  not_owner: () => 'Only an owner of the account this top-up is for can pay it; nothing was charged.',
  not_pending: (state) => `This top-up request is ${state}; nothing was charged. Send /topup again.`,
  amount_mismatch: () => 'The amount or currency does not match the top-up request; nothing was charged.',
};

/** The one line a person whose payment credited nothing is told (no one else's numbers in it). */
export function unmatchedLine(mismatch: Mismatch): string {
  const why: Record<Mismatch, string> = {
    unknown_request: 'it is for no known top-up request',
    not_owner: 'you are not an owner of the account it was for',
    not_pending: 'the top-up request is no longer pending',
    amount_mismatch: 'the amount or currency does not match the top-up request',
  };
  return `[live] Payment received but not credited (${why[mismatch]}): an operator will refund it.`;
}

export type PaymentOutcome =
  | { kind: 'credited'; request: TopupRow /** What the wallet may spend now. */; balanceMicros: number }
  | { kind: 'unmatched'; id: string; mismatch: Mismatch };

/**
 * A successful payment, in the update's transaction. Its charge id is claimed first (the primary
 * key of topup_payments), so a payment delivered twice, even at once, is recorded once: the second
 * waits for the first and returns null. A matching payment credits the request's amount (equal to
 * what was paid) and marks it paid; any other is recorded unmatched with audit `topup.unmatched`.
 */
export async function recordPayment(
  tx: Queryable,
  clock: Clock,
  actor: Actor,
  input: PaymentInput & { chargeId: string; providerChargeId: string | null; chatId: number },
): Promise<PaymentOutcome | null> {
  const now = clock.now();
  const request = looksLikeRequestId(input.payload) ? await lockRequest(tx, input.payload) : null;
  const { mismatch, payer } = await verdict(tx, now, input, request);
  const id = mismatch === null ? null : `tpu_${randomBase62(24)}`;
  const claimed = await tx.query(
    `insert into topup_payments (charge_id, provider_charge_id, request_id, ledger_entry, created_at, outcome, id,
                                 customer_id, payer_customer_id, telegram_user_id, chat_id, total_amount, currency,
                                 invoice_payload, reason)
     values ($1, $2, $3, null, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
     on conflict (charge_id) do nothing returning charge_id`,
    [
      input.chargeId,
      input.providerChargeId,
      request?.id ?? null,
      now,
      mismatch === null ? 'credited' : 'unmatched',
      id,
      request?.customerId ?? payer?.customerId ?? null,
      payer?.customerId ?? null,
      input.telegramUserId,
      input.chatId,
      input.totalAmount,
      input.currency,
      input.payload,
      mismatch,
    ],
  );
  if (claimed.rows.length === 0) return null;
  if (mismatch !== null || !request) {
    await recordAudit(
      tx,
      actor,
      {
        action: 'topup.unmatched',
        customerId: request?.customerId ?? payer?.customerId ?? null,
        target: id,
        details: {
          reason: mismatch,
          telegram_payment_charge_id: input.chargeId,
          provider_payment_charge_id: input.providerChargeId,
          total_amount: input.totalAmount,
          currency: input.currency,
          invoice_payload: input.payload,
          telegram_user_id: input.telegramUserId,
        },
      },
      clock,
    );
    return { kind: 'unmatched', id: id!, mismatch: mismatch ?? 'unknown_request' };
  }
  const note = `telegram payment ${input.chargeId} (provider ${input.providerChargeId ?? '-'}) for ${request.id}`;
  const entryId = await creditTopup(tx, clock, actor, {
    customerId: request.customerId,
    mode: request.mode,
    usdMicros: request.usdMicros,
    note,
    reference: request.id,
    details: {
      topup_request: request.id,
      telegram_payment_charge_id: input.chargeId,
      provider_payment_charge_id: input.providerChargeId,
    },
  });
  await tx.query('update topup_payments set ledger_entry = $2 where charge_id = $1', [
    input.chargeId,
    entryId,
  ]);
  await tx.query(
    `update topup_requests set state = 'paid', decided_at = $2, decided_by = $3
      where customer_id = $4 and id = $1 and state = 'pending'`,
    [request.id, now, actor.name, request.customerId],
  );
  return {
    kind: 'credited',
    request: { ...request, state: 'paid', decidedAt: now, decidedBy: actor.name },
    balanceMicros: await spendableBalance(tx, clock, request.customerId, request.mode),
  };
}

interface UnmatchedRow {
  id: string;
  customerId: string | null;
  payerCustomerId: string | null;
  telegramUserId: string;
  chargeId: string;
  providerChargeId: string | null;
  totalAmount: string;
  currency: string;
  payload: string;
  requestId: string | null;
  reason: Mismatch;
  createdAt: Date;
}

const num = (v: string | null) => (v === null ? null : Number(v));

/**
 * An unmatched payment in the shape of a request (GET /admin/v1/topup-requests), with what an
 * operator needs to refund it. `usd` is the amount paid in the currency's main unit (its smallest
 * unit / 100, as the invoice was made); `currency` and `total_amount` say exactly what was paid.
 * `customer_id` is the customer of the request the payload named, else the payer's (null: neither).
 */
function unmatchedView(r: UnmatchedRow) {
  return {
    id: r.id,
    customer_id: num(r.customerId),
    mode: 'live',
    usd: Number(r.totalAmount) / 100,
    state: 'unmatched',
    telegram_user_id: Number(r.telegramUserId),
    created_at: isoUtc(r.createdAt),
    decided_at: null,
    decided_by: null,
    reason: r.reason,
    telegram_payment_charge_id: r.chargeId,
    provider_payment_charge_id: r.providerChargeId,
    total_amount: Number(r.totalAmount),
    currency: r.currency,
    invoice_payload: r.payload,
    topup_request_id: r.requestId,
    payer_customer_id: num(r.payerCustomerId),
  };
}

async function listUnmatchedPayments(q: Queryable, f: { customerId?: number; limit: number }) {
  const r = await q.query<UnmatchedRow>(
    `select id, customer_id as "customerId", payer_customer_id as "payerCustomerId",
            telegram_user_id as "telegramUserId", charge_id as "chargeId", provider_charge_id as "providerChargeId",
            total_amount as "totalAmount", currency, invoice_payload as payload, request_id as "requestId", reason,
            created_at as "createdAt"
       from topup_payments
      where outcome = 'unmatched' and ($1::bigint is null or customer_id = $1 or payer_customer_id = $1)
      order by created_at desc, id desc limit $2`,
    [f.customerId ?? null, f.limit],
  );
  return r.rows;
}

/**
 * GET /admin/v1/topup-requests: requests and unmatched payments, newest first. A customer filter
 * finds an unmatched payment by the customer its payload named or by the payer's.
 */
export async function listTopupsForOperator(
  q: Queryable,
  f: { state?: TopupListState; customerId?: number; limit?: number },
) {
  const limit = f.limit ?? 100;
  const requests =
    f.state === 'unmatched'
      ? []
      : (await listTopupRequests(q, { state: f.state, customerId: f.customerId, limit })).map((r) => ({
          at: r.createdAt.getTime(),
          id: r.id,
          view: topupView(r) as Record<string, unknown>,
        }));
  const unmatched =
    f.state === undefined || f.state === 'unmatched'
      ? (await listUnmatchedPayments(q, { customerId: f.customerId, limit })).map((r) => ({
          at: new Date(r.createdAt).getTime(),
          id: r.id,
          view: unmatchedView(r) as Record<string, unknown>,
        }))
      : [];
  return [...requests, ...unmatched]
    .sort((a, b) => b.at - a.at || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
    .slice(0, limit)
    .map((x) => x.view);
}

/** Whether an unmatched payment has this id (approving or rejecting one is a conflict, not unknown). */
export async function unmatchedPaymentExists(q: Queryable, id: string): Promise<boolean> {
  const r = await q.query('select 1 from topup_payments where id = $1', [id]);
  return r.rows.length > 0;
}
