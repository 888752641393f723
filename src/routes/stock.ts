// GET /v1/stock (docs/reference/redeem.md#stock): the calling key's stock in its mode, every catalog category
// listed, zero counts included. Needs the `read` scope. Not billed.
import type { FastifyInstance } from 'fastify';
import type { AppContext } from '../core/context.ts';
import { stockSummary } from '../core/stock/stock.ts';

export function registerStockRoutes(app: FastifyInstance, ctx: AppContext) {
  app.get('/v1/stock', { config: { auth: 'read', readLimit: true } }, async (request) => {
    const key = request.auth!;
    return {
      ok: true,
      request_id: request.id,
      mode: key.mode,
      ...(await stockSummary(ctx.db, key.customerId, key.mode)),
    };
  });
}
