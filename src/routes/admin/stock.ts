// POST /admin/v1/customers/{id}/stock (docs/reference/operators-and-audit.md#stock-import): the operator imports codes into a
// customer's stock. The answer counts codes only; the codes themselves are never echoed or logged.
import type { FastifyInstance } from 'fastify';
import { z } from 'zod';
import type { AppContext } from '../../core/context.ts';
import { CATEGORIES } from '../../core/stock/catalog.ts';
import { importStockAs } from '../../core/stock/stock-changes.ts';
import { actorOf } from '../../http/admin-door.ts';
import { existingCustomerParam, modeSchema, parseBody } from './validation.ts';

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
    const customerId = await existingCustomerParam(ctx.db, request.params.id);
    const body = parseBody(importBody, request.body);
    const result = await importStockAs(ctx, actorOf(request), {
      customerId,
      mode: body.mode,
      category: body.category,
      codes: body.codes,
    });
    const { issues, ...counts } = result;
    request.log.info({ customerId, mode: body.mode, category: body.category, ...counts }, 'stock imported');
    return { ok: true, request_id: request.id, ...result };
  });
}
