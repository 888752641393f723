// Admin endpoints for customers, plans, subscriptions, keys and wallets (contract section 10).
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import {
  createCustomer,
  customerExists,
  deletePlan,
  disableCustomer,
  loadAccountState,
  MODES,
  setPlan,
  setSubscription,
  subscriptionView,
  today,
} from '../../core/accounts/accounts.ts';
import { ledgerPage, listCustomers } from '../../core/accounts/admin-lists.ts';
import { parseUsd, usdNumber } from '../../core/billing/money.ts';
import { appendLedger, walletSummary } from '../../core/billing/wallet.ts';
import { isoUtc } from '../../core/clock.ts';
import type { AppContext } from '../../core/context.ts';
import { ApiError } from '../../core/errors.ts';
import { issueKey, isValidAllowEntry, listKeys, revokeKey, SCOPES } from '../../core/keys/keys.ts';
import { stockSummary } from '../../core/stock/stock.ts';
import { idCursor, limitParam, parseQuery } from './query.ts';
import { customerIdParam, isoTimestamp, modeSchema, parseBody } from './validation.ts';

const usdSchema = (opts: { positive: boolean }) =>
  z.union([z.number(), z.string()]).transform((v, ctx) => {
    const micros = parseUsd(v);
    if (micros === null || (opts.positive && micros === 0)) {
      ctx.addIssue({
        code: 'custom',
        message: `must be a ${opts.positive ? 'positive' : 'non-negative'} USD amount with at most 6 decimals`,
      });
      return z.NEVER;
    }
    return micros;
  });

const customerBody = z.strictObject({ name: z.string().trim().min(1).max(200) });

const planBody = z.strictObject({
  label: z.string().trim().min(1).max(100),
  daily_limit: z.number().int().min(0).max(10_000_000).nullable(),
  per_request_usd: usdSchema({ positive: false }),
  overage: z.boolean(),
  active: z.boolean(),
});

const subscriptionBody = z.strictObject({
  required: z.boolean(),
  expires_at: isoTimestamp.nullable(),
});

const keyBody = z.strictObject({
  mode: modeSchema,
  scopes: z
    .array(z.enum(SCOPES))
    .max(SCOPES.length)
    .refine((a) => new Set(a).size === a.length, 'must not repeat a scope')
    .default(['redeem', 'read']),
  allowed_ips: z
    .array(z.string().trim().refine(isValidAllowEntry, 'must be IP addresses or CIDR blocks'))
    .max(100)
    .default([]),
  expires_at: isoTimestamp.nullable().default(null),
  label: z.string().max(200).default(''),
});

const topupBody = z.strictObject({
  mode: modeSchema,
  usd: usdSchema({ positive: true }),
  note: z.string().max(500).default(''),
});

const customersQuery = z.strictObject({
  q: z.string().max(200).optional(),
  cursor: idCursor.optional(),
  limit: limitParam(200, 50),
});

// The answer before paging was the newest 500 entries; without `limit` it still is.
const ledgerQuery = z.strictObject({
  mode: modeSchema.optional(),
  cursor: idCursor.optional(),
  limit: limitParam(500, 500),
});

export function registerAdminCustomerRoutes(app: FastifyInstance, ctx: AppContext) {
  const { db, clock } = ctx;

  async function requireCustomer(raw: string): Promise<number> {
    const id = customerIdParam(raw);
    if (!(await customerExists(db, id))) throw new ApiError('not_found', 'unknown customer');
    return id;
  }

  app.post('/admin/v1/customers', async (request, reply) => {
    const body = parseBody(customerBody, request.body);
    const customerId = await createCustomer(db, body.name, clock);
    return reply.code(201).send({ ok: true, request_id: request.id, customer_id: customerId });
  });

  app.get('/admin/v1/customers', async (request) => {
    const q = parseQuery(customersQuery, request.query);
    const page = await listCustomers(db, { search: q.q, afterId: q.cursor, limit: q.limit });
    return { ok: true, request_id: request.id, ...page };
  });

  app.get<{ Params: { id: string } }>('/admin/v1/customers/:id', async (request) => {
    const id = customerIdParam(request.params.id);
    const day = today(clock);
    const [live, test] = await Promise.all(MODES.map((m) => loadAccountState(db, id, m, day)));
    if (!live || !test) throw new ApiError('not_found', 'unknown customer');
    const info = await db.query<{ name: string; createdAt: Date; disabledAt: Date | null }>(
      'select name, created_at as "createdAt", disabled_at as "disabledAt" from customers where id = $1',
      [id],
    );
    const c = info.rows[0]!;
    const keys = await listKeys(db, id);
    return {
      ok: true,
      request_id: request.id,
      customer: {
        customer_id: id,
        name: c.name,
        created_at: isoUtc(c.createdAt),
        disabled: c.disabledAt !== null,
        disabled_at: c.disabledAt ? isoUtc(c.disabledAt) : null,
      },
      plan: live.plan
        ? {
            label: live.plan.label,
            daily_limit: live.plan.dailyLimit,
            per_request_usd: usdNumber(live.plan.perRequestMicros),
            overage: live.plan.overage,
            active: live.plan.active,
          }
        : null,
      subscription: subscriptionView(live.subscription, clock.now()),
      keys: keys.map((k) => ({
        key_id: k.id,
        key_prefix: k.keyPrefix,
        mode: k.mode,
        scopes: k.scopes,
        allowed_ips: k.allowedIps,
        label: k.label,
        created_at: isoUtc(k.createdAt),
        expires_at: k.expiresAt ? isoUtc(k.expiresAt) : null,
        revoked_at: k.revokedAt ? isoUtc(k.revokedAt) : null,
      })),
      wallets: await walletSummary(db, id),
      usage_today: Object.fromEntries(
        [live, test].map((s, i) => [MODES[i], { used: s.usedToday, overage: s.overageToday }]),
      ),
      stock: Object.fromEntries(
        await Promise.all(MODES.map(async (m) => [m, await stockSummary(db, id, m)] as const)),
      ),
    };
  });

  app.post<{ Params: { id: string } }>('/admin/v1/customers/:id/disable', async (request) => {
    const id = customerIdParam(request.params.id);
    if (!(await disableCustomer(db, id, clock))) throw new ApiError('not_found', 'unknown customer');
    return { ok: true, request_id: request.id, customer_id: id, disabled: true };
  });

  app.put<{ Params: { id: string } }>('/admin/v1/customers/:id/plan', async (request) => {
    const id = await requireCustomer(request.params.id);
    const body = parseBody(planBody, request.body);
    await setPlan(
      db,
      id,
      {
        label: body.label,
        dailyLimit: body.daily_limit,
        perRequestMicros: body.per_request_usd,
        overage: body.overage,
        active: body.active,
      },
      clock,
    );
    return { ok: true, request_id: request.id, customer_id: id };
  });

  app.delete<{ Params: { id: string } }>('/admin/v1/customers/:id/plan', async (request) => {
    const id = await requireCustomer(request.params.id);
    await deletePlan(db, id);
    return { ok: true, request_id: request.id, customer_id: id };
  });

  app.put<{ Params: { id: string } }>('/admin/v1/customers/:id/subscription', async (request) => {
    const id = await requireCustomer(request.params.id);
    const body = parseBody(subscriptionBody, request.body);
    await setSubscription(db, id, { required: body.required, expiresAt: body.expires_at });
    return { ok: true, request_id: request.id, customer_id: id };
  });

  app.post<{ Params: { id: string } }>('/admin/v1/customers/:id/keys', async (request, reply) => {
    const id = await requireCustomer(request.params.id);
    const body = parseBody(keyBody, request.body);
    const issued = await issueKey(
      db,
      id,
      {
        mode: body.mode,
        scopes: body.scopes,
        allowedIps: body.allowed_ips,
        expiresAt: body.expires_at,
        label: body.label,
      },
      clock,
    );
    return reply.code(201).send({
      ok: true,
      request_id: request.id,
      key_id: issued.keyId,
      key: issued.key,
      key_prefix: issued.keyPrefix,
    });
  });

  app.post<{ Params: { keyId: string } }>('/admin/v1/keys/:keyId/revoke', async (request) => {
    if (!(await revokeKey(db, request.params.keyId, clock))) throw new ApiError('not_found', 'unknown key');
    return { ok: true, request_id: request.id, key_id: request.params.keyId, revoked: true };
  });

  app.post<{ Params: { id: string } }>('/admin/v1/customers/:id/wallet/topup', async (request) => {
    const id = await requireCustomer(request.params.id);
    const body = parseBody(topupBody, request.body);
    await db.transaction((tx) =>
      appendLedger(
        tx,
        {
          customerId: id,
          mode: body.mode,
          amountMicros: body.usd,
          kind: 'topup',
          note: body.note,
          // The admin API has one operator credential and no names yet.
          actor: 'operator',
          requestId: request.id,
        },
        clock,
      ),
    );
    const state = (await loadAccountState(db, id, body.mode, today(clock)))!;
    return {
      ok: true,
      request_id: request.id,
      customer_id: id,
      mode: body.mode,
      balance_usd: usdNumber(state.balanceMicros - state.heldMicros),
    };
  });

  app.get<{ Params: { id: string } }>('/admin/v1/customers/:id/ledger', async (request) => {
    const id = await requireCustomer(request.params.id);
    const q = parseQuery(ledgerQuery, request.query);
    if (!q.mode) throw new ApiError('bad_request', 'mode: must be live or test');
    const page = await ledgerPage(db, id, q.mode, { beforeId: q.cursor, limit: q.limit });
    return { ok: true, request_id: request.id, customer_id: id, mode: q.mode, ...page };
  });
}
