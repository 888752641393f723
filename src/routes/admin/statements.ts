// GET /admin/v1/customers/{id}/statements?mode=&from=&to= (docs/reference/statements.md#the-request): a customer's
// statement as the merchant sees it, JSON or CSV (Accept: text/csv); the console downloads it.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { customerExists } from '../../core/accounts/accounts.ts';
import { buildStatement } from '../../core/billing/statements.ts';
import type { AppContext } from '../../core/context.ts';
import { ApiError } from '../../core/errors.ts';
import { sendStatement, statementQueryFields } from '../statements.ts';
import { parseQuery } from './query.ts';
import { customerIdParam, modeSchema } from './validation.ts';

const adminStatementQuery = z.strictObject({ mode: modeSchema.default('live'), ...statementQueryFields });

export function registerAdminStatementRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get<{ Params: { id: string } }>('/admin/v1/customers/:id/statements', async (request, reply) => {
    const customerId = customerIdParam(request.params.id);
    if (!(await customerExists(ctx.db, customerId))) throw new ApiError('not_found', 'unknown customer');
    const q = parseQuery(adminStatementQuery, request.query);
    const statement = await buildStatement(ctx.db, { customerId, mode: q.mode }, q, ctx.clock.now());
    return sendStatement(request, reply, statement);
  });
}
