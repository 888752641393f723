// Admin endpoints for customers, plans and subscriptions (docs/reference/operators-and-audit.md#the-admin-api). Each route
// validates, makes one call into core (which writes the change and its audit row together) and
// sends. Keys are in keys.ts, wallets in wallet.ts.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { listCustomers } from '../../core/accounts/admin-lists.ts';
import {
  createCustomerAs,
  deletePlanAs,
  disableCustomerAs,
  enableCustomerAs,
  setPlanAs,
  setSubscriptionAs,
} from '../../core/accounts/customer-changes.ts';
import { customerDetail } from '../../core/admin-views/customer-detail.ts';
import { voidCustomerTopups } from '../../core/bot/topup-endings.ts';
import type { AppContext } from '../../core/context.ts';
import { parseUsd } from '../../core/money.ts';
import { healthOfCustomers } from '../../core/requests/merchant-health.ts';
import { actorOf } from '../../http/admin-door.ts';
import { idCursor, limitParam, parseQuery } from './query.ts';
import { customerIdParam, existingCustomerParam, isoTimestamp, parseBody } from './validation.ts';

const nonNegativeUsd = z.union([z.number(), z.string()]).transform((v, ctx) => {
  const micros = parseUsd(v);
  if (micros === null) {
    ctx.addIssue({ code: 'custom', message: 'must be a non-negative USD amount with at most 6 decimals' });
    return z.NEVER;
  }
  return micros;
});

const customerBody = z.strictObject({ name: z.string().trim().min(1).max(200) });

const planBody = z.strictObject({
  label: z.string().trim().min(1).max(100),
  daily_limit: z.number().int().min(0).max(10_000_000).nullable(),
  per_request_usd: nonNegativeUsd,
  overage: z.boolean(),
  active: z.boolean(),
});

const subscriptionBody = z.strictObject({
  required: z.boolean(),
  expires_at: isoTimestamp.nullable(),
});

const customersQuery = z.strictObject({
  q: z.string().max(200).optional(),
  cursor: idCursor.optional(),
  limit: limitParam(200, 50),
});

type IdParams = { Params: { id: string } };

export function registerAdminCustomerRoutes(app: FastifyInstance, ctx: AppContext) {
  app.post('/admin/v1/customers', async (request, reply) => {
    const body = parseBody(customerBody, request.body);
    const customerId = await createCustomerAs(ctx, actorOf(request), body.name);
    return reply.code(201).send({ ok: true, request_id: request.id, customer_id: customerId });
  });

  app.get('/admin/v1/customers', async (request) => {
    const q = parseQuery(customersQuery, request.query);
    const page = await listCustomers(ctx.db, { search: q.q, afterId: q.cursor, limit: q.limit });
    // Each customer's health per mode: its receiver's run of failures, its refusals today.
    const health = await healthOfCustomers(
      ctx.db,
      page.customers.map((c) => c.customer_id),
      ctx.clock,
    );
    const customers = page.customers.map((c) => ({ ...c, health: health.get(c.customer_id) }));
    return { ok: true, request_id: request.id, ...page, customers };
  });

  app.get<IdParams>('/admin/v1/customers/:id', async (request) => {
    const detail = await customerDetail(ctx.db, customerIdParam(request.params.id), ctx.clock);
    return { ok: true, request_id: request.id, ...detail };
  });

  app.post<IdParams>('/admin/v1/customers/:id/disable', async (request) => {
    const id = customerIdParam(request.params.id);
    const actor = actorOf(request);
    await disableCustomerAs(ctx, actor, id, (tx) => voidCustomerTopups(tx, ctx.clock.now(), id, actor.name));
    return { ok: true, request_id: request.id, customer_id: id, disabled: true };
  });

  app.post<IdParams>('/admin/v1/customers/:id/enable', async (request) => {
    const id = customerIdParam(request.params.id);
    await enableCustomerAs(ctx, actorOf(request), id);
    return { ok: true, request_id: request.id, customer_id: id, disabled: false };
  });

  app.put<IdParams>('/admin/v1/customers/:id/plan', async (request) => {
    const id = await existingCustomerParam(ctx.db, request.params.id);
    const body = parseBody(planBody, request.body);
    await setPlanAs(ctx, actorOf(request), id, {
      label: body.label,
      dailyLimit: body.daily_limit,
      perRequestMicros: body.per_request_usd,
      overage: body.overage,
      active: body.active,
    });
    return { ok: true, request_id: request.id, customer_id: id };
  });

  app.delete<IdParams>('/admin/v1/customers/:id/plan', async (request) => {
    const id = customerIdParam(request.params.id);
    await deletePlanAs(ctx, actorOf(request), id);
    return { ok: true, request_id: request.id, customer_id: id };
  });

  app.put<IdParams>('/admin/v1/customers/:id/subscription', async (request) => {
    const id = await existingCustomerParam(ctx.db, request.params.id);
    const body = parseBody(subscriptionBody, request.body);
    await setSubscriptionAs(ctx, actorOf(request), id, {
      required: body.required,
      expiresAt: body.expires_at,
    });
    return { ok: true, request_id: request.id, customer_id: id };
  });
}
