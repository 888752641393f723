// Admin wallet endpoints (docs/reference/operators-and-audit.md#wallet-top-ups-and-adjustments): a top-up and a correcting adjustment, both under an
// Idempotency-Key scoped to the customer, and the ledger with who and which request made each
// entry. The answer of a wallet write is stored with its key and sent again byte for byte.
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ledgerCsv } from '../../core/accounts/admin-exports.ts';
import { ledgerPage } from '../../core/accounts/admin-lists.ts';
import { ADMIN_IDEMPOTENCY_KEY } from '../../core/billing/admin-idempotency.ts';
import {
  changeWallet,
  MAX_WALLET_CHANGE_MICROS,
  type WalletChange,
} from '../../core/billing/wallet-changes.ts';
import type { AppContext } from '../../core/context.ts';
import { ApiError } from '../../core/errors.ts';
import { parseUsd } from '../../core/money.ts';
import { requestFingerprint } from '../../core/redeem/request.ts';
import { actorOf } from '../../http/admin-door.ts';
import { formatParam, sendCsv, wantsCsv } from './csv.ts';
import { idCursor, limitParam, parseQuery } from './query.ts';
import { customerIdParam, existingCustomerParam, modeSchema, parseBody } from './validation.ts';

const AMOUNT_RULE = 'USD amount with at most 6 decimals, at most 1000000';

/** A signed USD amount (decimal string or number) within ±1,000,000, at most 6 decimals; never 0. */
const usdAmount = (opts: { signed: boolean }) =>
  z.union([z.number(), z.string()]).transform((v, ctx) => {
    const text = typeof v === 'number' ? String(v) : v.trim();
    const negative = opts.signed && text.startsWith('-');
    const micros = parseUsd(negative ? text.slice(1) : typeof v === 'number' ? v : text);
    if (micros === null || micros === 0 || micros > MAX_WALLET_CHANGE_MICROS) {
      ctx.addIssue({
        code: 'custom',
        message: opts.signed
          ? `must be a non-zero ${AMOUNT_RULE} (either sign)`
          : `must be a positive ${AMOUNT_RULE}`,
      });
      return z.NEVER;
    }
    return negative ? -micros : micros;
  });

const topupBody = z.strictObject({
  mode: modeSchema,
  usd: usdAmount({ signed: false }),
  note: z.string().max(500).default(''),
});

const adjustBody = z.strictObject({
  mode: modeSchema,
  usd: usdAmount({ signed: true }),
  reason: z.string().trim().min(1).max(500),
});

// The answer before paging was the newest 500 entries; without `limit` it still is.
const ledgerQuery = z.strictObject({
  mode: modeSchema.optional(),
  cursor: idCursor.optional(),
  limit: limitParam(500, 500),
  ...formatParam,
});

/** The Idempotency-Key header: missing → 400 idempotency_required; malformed → 400 bad_request. */
function idempotencyKey(request: FastifyRequest): string {
  const raw = request.headers['idempotency-key'];
  if (raw === undefined)
    throw new ApiError('idempotency_required', 'this request needs an Idempotency-Key header');
  if (typeof raw !== 'string' || !ADMIN_IDEMPOTENCY_KEY.test(raw))
    throw new ApiError('bad_request', 'Idempotency-Key: must be 1 to 255 printable ASCII characters');
  return raw;
}

type IdParams = { Params: { id: string } };

export function registerAdminWalletRoutes(app: FastifyInstance, ctx: AppContext) {
  const write = async (request: FastifyRequest<IdParams>, reply: FastifyReply, change: WalletChange) => {
    const customerId = customerIdParam(request.params.id);
    const key = idempotencyKey(request);
    const fingerprint = requestFingerprint(request.method, request.url.split('?')[0]!, request.body);
    const answer = await changeWallet(ctx, actorOf(request), customerId, { key, fingerprint }, change);
    return reply
      .code(answer.status)
      .header('SVC-Idempotent-Replay', String(answer.replay))
      .header('X-Request-Id', answer.requestId)
      .type('application/json; charset=utf-8')
      .send(answer.body);
  };

  app.post<IdParams>('/admin/v1/customers/:id/wallet/topup', async (request, reply) => {
    await existingCustomerParam(ctx.db, request.params.id);
    const body = parseBody(topupBody, request.body);
    return write(request, reply, { mode: body.mode, amountMicros: body.usd, kind: 'topup', note: body.note });
  });

  app.post<IdParams>('/admin/v1/customers/:id/wallet/adjust', async (request, reply) => {
    await existingCustomerParam(ctx.db, request.params.id);
    const body = parseBody(adjustBody, request.body);
    return write(request, reply, {
      mode: body.mode,
      amountMicros: body.usd,
      kind: 'adjustment',
      note: body.reason,
    });
  });

  app.get<IdParams>('/admin/v1/customers/:id/ledger', async (request, reply) => {
    const id = await existingCustomerParam(ctx.db, request.params.id);
    const q = parseQuery(ledgerQuery, request.query);
    if (!q.mode) throw new ApiError('bad_request', 'mode: must be live or test');
    if (wantsCsv(request, q.format)) {
      const { csv, truncated } = await ledgerCsv(ctx.db, id, q.mode);
      return sendCsv(reply, `ledger-${id}-${q.mode}.csv`, csv, truncated);
    }
    const page = await ledgerPage(ctx.db, id, q.mode, { beforeId: q.cursor, limit: q.limit });
    return { ok: true, request_id: request.id, customer_id: id, mode: q.mode, ...page };
  });
}
