// Top-up requests from the chat bot (docs/reference/bot.md#top-ups): listed for the operator, approved (credits
// the wallet once, however often sent) or rejected with a reason; the person who asked is told in
// the chat either way. The list also shows payments that credited nothing (state `unmatched`,
// ids `tpu_…`), for a refund: approving or rejecting one is a conflict.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { loadAccountState, today } from '../../core/accounts/accounts.ts';
import { listTopupsForOperator, unmatchedPaymentExists } from '../../core/bot/topup-payments.ts';
import { approveTopup, rejectTopup, TOPUP_LIST_STATES, topupView } from '../../core/bot/topups.ts';
import { ApiError } from '../../core/errors.ts';
import { usdNumber, usdText } from '../../core/money.ts';
import { actorOf } from '../../http/admin-door.ts';
import type { ServerContext } from '../../http/context.ts';
import { parseBody } from './validation.ts';

const listQuery = z.strictObject({
  state: z.enum(TOPUP_LIST_STATES).optional(),
  customer_id: z
    .string()
    .regex(/^[1-9]\d{0,15}$/)
    .transform(Number)
    .optional(),
});
const rejectBody = z.strictObject({ reason: z.string().trim().min(1).max(500) });
/** A request id to decide on; an unmatched payment's id is known but cannot be decided on. */
async function idOf(ctx: ServerContext, raw: string) {
  if (/^tpu_[A-Za-z0-9]{1,40}$/.test(raw) && (await unmatchedPaymentExists(ctx.db, raw)))
    throw new ApiError(
      'conflict',
      'an unmatched payment credits nothing and cannot be decided on; refund it',
    );
  if (!/^tpr_[A-Za-z0-9]{1,40}$/.test(raw)) throw new ApiError('not_found', 'unknown top-up request');
  return raw;
}

export function registerAdminTopupRoutes(app: FastifyInstance, ctx: ServerContext) {
  app.get('/admin/v1/topup-requests', async (request) => {
    const q = parseBody(listQuery, request.query);
    const requests = await listTopupsForOperator(ctx.db, { state: q.state, customerId: q.customer_id });
    return { ok: true, request_id: request.id, requests };
  });

  app.post<{ Params: { id: string } }>('/admin/v1/topup-requests/:id/approve', async (request) => {
    const { request: row, credited } = await approveTopup(
      ctx,
      actorOf(request),
      await idOf(ctx, request.params.id),
    );
    const state = await loadAccountState(ctx.db, row.customerId, row.mode, today(ctx.clock));
    const balance = state ? state.balanceMicros - state.heldMicros : 0;
    if (credited)
      await ctx.bot?.tell(
        row.chatId,
        `[${row.mode}]\nYour top-up request ${row.id} was approved.\namount_usd: ${usdText(row.usdMicros)}\nbalance_usd: ${usdText(balance)}`,
      );
    return { ok: true, request_id: request.id, request: topupView(row), balance_usd: usdNumber(balance) };
  });

  app.post<{ Params: { id: string } }>('/admin/v1/topup-requests/:id/reject', async (request) => {
    const id = await idOf(ctx, request.params.id);
    const body = parseBody(rejectBody, request.body);
    const row = await rejectTopup(ctx, actorOf(request), id, body.reason);
    await ctx.bot?.tell(
      row.chatId,
      `[${row.mode}]\nYour top-up request ${row.id} was rejected: ${body.reason}\nNothing was charged or credited.`,
    );
    return { ok: true, request_id: request.id, request: topupView(row) };
  });
}
