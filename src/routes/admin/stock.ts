// POST /admin/v1/customers/{id}/stock (contract section 10): the operator imports codes into a
// customer's stock. The answer counts codes only; the codes themselves are never echoed or logged.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import { customerExists } from '../../core/accounts/accounts.ts';
import type { AppContext } from '../../core/context.ts';
import { ApiError } from '../../core/errors.ts';
import { CATEGORIES } from '../../core/stock/catalog.ts';
import { importStock } from '../../core/stock/stock.ts';
import { customerIdParam, modeSchema, parseBody } from './validation.ts';

/** Codes in one import, at most (a larger stock is imported in several calls). */
export const MAX_IMPORT_CODES = 10_000;

const importBody = z.strictObject({
  mode: modeSchema,
  category: z.string().refine((c) => CATEGORIES.includes(c), {
    message: `must be one of the catalog categories ${CATEGORIES.join(', ')}`,
  }),
  // Malformed codes are counted as rejected, not refused: only the shape of the list is checked.
  codes: z.array(z.string()).max(MAX_IMPORT_CODES),
});

export function registerAdminStockRoutes(app: FastifyInstance, ctx: AppContext) {
  app.post<{ Params: { id: string } }>('/admin/v1/customers/:id/stock', async (request) => {
    const customerId = customerIdParam(request.params.id);
    if (!(await customerExists(ctx.db, customerId))) throw new ApiError('not_found', 'unknown customer');
    const body = parseBody(importBody, request.body);
    const result = await importStock(
      ctx.db,
      ctx.codeKey,
      { customerId, mode: body.mode, category: body.category, codes: body.codes },
      ctx.clock,
    );
    request.log.info({ customerId, mode: body.mode, category: body.category, ...result }, 'stock imported');
    return { ok: true, request_id: request.id, ...result };
  });
}
