// Admin endpoints for API keys: issue (docs/reference/operators-and-audit.md#the-admin-api), revoke, and reroll with a grace period
// (docs/reference/operators-and-audit.md#key-reroll). Each route validates, makes one call into core and sends.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { isoUtc } from '../../core/clock.ts';
import type { AppContext } from '../../core/context.ts';
import { issueKeyAs, MAX_GRACE_SECONDS, rerollKeyAs, revokeKeyAs } from '../../core/keys/key-changes.ts';
import { isValidAllowEntry, SCOPES } from '../../core/keys/keys.ts';
import { actorOf } from '../../http/admin-door.ts';
import { existingCustomerParam, isoTimestamp, modeSchema, parseBody } from './validation.ts';

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

const rerollBody = z.strictObject({ grace_seconds: z.number().int().min(0).max(MAX_GRACE_SECONDS) });

type KeyParams = { Params: { keyId: string } };

export function registerAdminKeyRoutes(app: FastifyInstance, ctx: AppContext) {
  app.post<{ Params: { id: string } }>('/admin/v1/customers/:id/keys', async (request, reply) => {
    const id = await existingCustomerParam(ctx.db, request.params.id);
    const body = parseBody(keyBody, request.body);
    const issued = await issueKeyAs(ctx, actorOf(request), id, {
      mode: body.mode,
      scopes: body.scopes,
      allowedIps: body.allowed_ips,
      expiresAt: body.expires_at,
      label: body.label,
    });
    return reply.code(201).send({
      ok: true,
      request_id: request.id,
      key_id: issued.keyId,
      key: issued.key,
      key_prefix: issued.keyPrefix,
    });
  });

  app.post<KeyParams>('/admin/v1/keys/:keyId/revoke', async (request) => {
    await revokeKeyAs(ctx, actorOf(request), request.params.keyId);
    return { ok: true, request_id: request.id, key_id: request.params.keyId, revoked: true };
  });

  app.post<KeyParams>('/admin/v1/keys/:keyId/reroll', async (request, reply) => {
    const body = parseBody(rerollBody, request.body);
    const r = await rerollKeyAs(ctx, actorOf(request), request.params.keyId, body.grace_seconds);
    return reply.code(201).send({
      ok: true,
      request_id: request.id,
      key_id: r.keyId,
      key: r.key,
      key_prefix: r.keyPrefix,
      old_key_expires_at: isoUtc(r.oldKeyExpiresAt),
    });
  });
}
