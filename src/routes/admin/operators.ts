// Admin endpoints for operators (docs/reference/operators-and-audit.md#operators-and-roles) and the audit log (docs/reference/operators-and-audit.md#audit-log). The role check is the
// door's (src/http/admin-door.ts): a viewer reaches only the GETs.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../core/context.ts';
import { AUDIT_ACTIONS, auditPage } from '../../core/operators/audit.ts';
import { auditCsv } from '../../core/operators/audit-csv.ts';
import {
  createOperator,
  listOperators,
  OPERATOR_NAME,
  revokeOperator,
} from '../../core/operators/operators.ts';
import { actorOf } from '../../http/admin-door.ts';
import { formatParam, sendCsv, wantsCsv } from './csv.ts';
import { cursorParam, customerIdQuery, limitParam, parseQuery } from './query.ts';
import { parseBody } from './validation.ts';

const operatorBody = z.strictObject({
  name: z.string().regex(OPERATOR_NAME, 'must be 1 to 64 letters, digits, ".", "_" or "-"'),
  role: z.enum(['admin', 'viewer']),
});

const auditQuery = z.strictObject({
  customer_id: customerIdQuery.optional(),
  actor: z.string().regex(OPERATOR_NAME, 'must be an operator name').optional(),
  action: z.enum(AUDIT_ACTIONS).optional(),
  limit: limitParam(500, 50),
  cursor: cursorParam((p) =>
    p.length === 1 && Number.isSafeInteger(p[0]) && (p[0] as number) > 0 ? (p[0] as number) : null,
  ).optional(),
  ...formatParam,
});

export function registerAdminOperatorRoutes(app: FastifyInstance, ctx: AppContext) {
  app.post('/admin/v1/operators', async (request, reply) => {
    const body = parseBody(operatorBody, request.body);
    const created = await createOperator(ctx.db, actorOf(request), body, ctx.clock);
    return reply.code(201).send({
      ok: true,
      request_id: request.id,
      operator_id: created.operatorId,
      name: created.name,
      role: created.role,
      token: created.token,
    });
  });

  app.get('/admin/v1/operators', async (request) => {
    return { ok: true, request_id: request.id, operators: await listOperators(ctx.db) };
  });

  app.post<{ Params: { id: string } }>('/admin/v1/operators/:id/revoke', async (request) => {
    const operator = await revokeOperator(ctx.db, actorOf(request), request.params.id, ctx.clock);
    return { ok: true, request_id: request.id, ...operator };
  });

  app.get('/admin/v1/audit', async (request, reply) => {
    const q = parseQuery(auditQuery, request.query);
    if (wantsCsv(request, q.format)) {
      const filter = { customerId: q.customer_id, actor: q.actor, action: q.action };
      const { csv, truncated } = await auditCsv(ctx.db, filter);
      return sendCsv(reply, 'audit.csv', csv, truncated);
    }
    const page = await auditPage(ctx.db, {
      customerId: q.customer_id,
      actor: q.actor,
      action: q.action,
      beforeSeq: q.cursor,
      limit: q.limit,
    });
    return { ok: true, request_id: request.id, ...page };
  });
}
